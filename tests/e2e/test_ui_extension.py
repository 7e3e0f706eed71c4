"""We test these aspects of the Argo CD UI extension (ui/), in headless Chromium, against the real
local stack through the Argo CD stand-in (sandbox/argocd_host) and its proxy:

- the application tab shows the API's figures, to the cent and with the currency: monthly
  projection, last 24 h, the breakdown by resource, workload idle, the scope, the change since
  the previous sync; the daily chart has one bar per day of the API's history, in order;
- an application measured only at install says so and has no trend; a namespace-scope record is
  labelled as such; an application deployed to another cluster gets the notice and no API call;
  an application without a record gets the "no record yet" state (a 200 of the API), not an error;
- the cluster view lists the namespaces, the month's chargeback lines (idle and shared) and the
  unlabelled namespaces as the API does; a user who may not read the gate application sees the
  refusal and no figure; a 503 of the cost service is shown as such;
- ``finops run`` (``make run``) prints the page's URL, and there the demo's argocd/web tab shows its
  cost, its change since the previous sync and one bar per day of its history, with at least 7
  recorded past days; argocd/payments-gateway's second demo sync changed its monthly figure;
- the tab's cards show the API's JSON to the cent, with the currency: the anomaly score with its
  baseline and badge, or the reason there is none; rightsizing (current and suggested requests,
  monthly change, low confidence, warnings; a VPA that applies itself gets its badge only; "not
  available" is a muted note, not an error); the orphaned pods with owner ("bare pod"), cost,
  hours and total; the cloud estimates with their age, warned when stale (older than 7 days);
  a data-quality notice only when something explains a missing figure (OpenCost unreachable);
- the cluster view ranks the applications by anomaly score and lists the orphaned pods of every
  managed namespace as the API does;
- no page logs a console error (every screen fails its test on one): an application without a
  record and a user who may not read the gate application are states answered with 200; only
  the outage host's 503s have the browser's own line, as any failed load does.
- GPUs and emissions, over a cluster with GPUs and carbon estimates (ui_world's ``GPU_SCENARIO``,
  its figures computed by hand there): the tab shows the application's GPU-hours, GPU cost and
  cost per busy GPU-hour, and its kg CO2e beside its cost with the factors' source and region;
  the cluster view shows GPU-hours and GPU cost per team with each GPU model's idle on its own
  line, and kg CO2e per team and namespace beside cost; an hour stored without emissions is
  named, and a cluster with none shows no kg at all, never 0;
- the README's screenshots (``make screenshots``): the demo's argocd/web Cost tab and the cluster
  view, every card loaded.
Every test saves a screenshot under .local/artifacts/ui-extension/.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser

from sandbox.argocd_host import ArgoHost
from tests.e2e import ui_world
from tests.e2e.ui_world import Screen, formatted_change, money, through_proxy

# The module's fixtures (one world and one browser for the module): ui_world.py.
host, browser, screen = ui_world.host, ui_world.browser, ui_world.screen
outage_host, outage_screen = ui_world.outage_host, ui_world.outage_screen
gpu_host, gpu_screen = ui_world.gpu_host, ui_world.gpu_screen
demo_run, demo = ui_world.demo_run, ui_world.demo

RESOURCES = ("cpu", "ram", "gpu", "pv", "network", "lb")


def _figures(actual: dict[str, Any]) -> dict[str, Any]:
    figures: dict[str, Any] = actual["application"] if actual["scope"] == "application" else actual["namespace"]
    return figures


def test_the_tab_shows_the_apis_cost_trend_and_daily_chart(screen: Screen, host: ArgoHost) -> None:
    app = "argocd:web"
    actual = through_proxy(host, "/apps/argocd/web/actual", app)
    trend = through_proxy(host, "/apps/argocd/web/trend", app)
    daily = through_proxy(host, "/apps/argocd/web/daily?days=30", app)
    currency = daily["currency"]
    assert currency == "USD" and actual["currency"] == trend["currency"] == currency  # the rows' currency
    page = screen.open("/?app=argocd/web")
    page.get_by_test_id("actual").wait_for()
    figures = _figures(actual)
    assert screen.text("monthly") == money(figures["monthly"]["amount"], currency)
    assert screen.text("last-24h") == money(figures["cost"]["amount"], currency)
    assert screen.text("idle") == money(figures["workloadIdle"]["amount"], currency)
    for key in RESOURCES:
        assert screen.text(f"breakdown-{key}") == money(figures["breakdown"][key], currency), key
    assert page.get_by_test_id("scope-label").get_attribute("data-scope") == actual["scope"]
    assert page.get_by_test_id("install-label").count() == 0
    change = trend["change"]["amount"]
    assert screen.text("trend-change") == ("" if change.startswith("-") else "+") + money(change, currency)
    assert trend["previous"]["revision"] == "1111111" and "1111111" in screen.text("trend")
    bars = page.get_by_test_id("daily-point")
    assert bars.count() == len(daily["days"]) >= 2
    assert [bars.nth(i).get_attribute("data-day") for i in range(bars.count())] == [d["day"] for d in daily["days"]]
    assert [bars.nth(i).get_attribute("data-amount") for i in range(bars.count())] == [
        d["cost"]["amount"] for d in daily["days"]
    ]
    assert bars.last.get_attribute("data-final") == "false"  # today, still counting
    assert money(daily["total"]["amount"], currency) in screen.text("daily-total")
    assert "NaN" not in page.inner_text("body")
    assert screen.errors == []
    assert screen.shot("app-tab-argocd-web").stat().st_size > 0


def test_a_record_measured_at_install_is_labelled_and_has_no_trend(screen: Screen, host: ArgoHost) -> None:
    actual = through_proxy(host, "/apps/argocd/cart/actual", "argocd:cart")
    assert actual["measuredAtInstall"] is True
    page = screen.open("/?app=argocd/cart")
    page.get_by_test_id("install-label").wait_for()
    assert "measured at install" in screen.text("install-label")
    page.get_by_test_id("trend-none").wait_for()
    assert page.get_by_test_id("trend-change").count() == 0
    assert screen.errors == []


def test_a_namespace_scope_record_is_labelled(screen: Screen, host: ArgoHost) -> None:
    actual = through_proxy(host, "/apps/team-apps/web/actual", "team-apps:web")
    assert actual["scope"] == "namespace"
    page = screen.open("/?app=team-apps/web")
    label = page.get_by_test_id("scope-label")
    label.wait_for()
    assert label.get_attribute("data-scope") == "namespace"
    assert "namespace scope" in label.inner_text() and actual["destinationNamespace"] in label.inner_text()
    assert screen.text("monthly") == money(actual["namespace"]["monthly"]["amount"], "USD")
    assert screen.errors == []


def test_an_application_of_another_cluster_gets_the_notice_and_no_call(screen: Screen) -> None:
    page = screen.open("/?app=argocd/faraway")
    notice = page.get_by_test_id("remote-notice")
    notice.wait_for()
    assert "another cluster" in notice.inner_text() and "https://remote.example:6443" in notice.inner_text()
    assert screen.calls == []
    assert page.get_by_test_id("monthly").count() == 0
    assert screen.errors == []


def test_an_application_without_a_record_says_so(screen: Screen) -> None:
    page = screen.open("/?app=argocd/ghost")
    page.get_by_test_id("actual-empty").wait_for()
    assert "No cost record for argocd/ghost yet" in screen.text("actual-empty")
    assert page.get_by_test_id("actual-error").count() == 0
    for section in ("trend-empty", "daily-empty"):  # each section loads on its own
        page.get_by_test_id(section).wait_for()
        assert page.get_by_test_id(section).count() == 1
    assert "NaN" not in page.inner_text("body")
    assert screen.errors == []  # "no record yet" is a 200: no failed load in the console


def test_the_cluster_view_lists_namespaces_chargeback_and_unlabelled(screen: Screen, host: ArgoHost) -> None:
    gate = "argocd:cost-gate"
    namespaces = through_proxy(host, "/namespaces?days=30", gate)["namespaces"]
    chargeback = through_proxy(host, "/chargeback", gate)
    currency = chargeback["currency"]
    page = screen.open("/?view=finops")
    page.get_by_test_id("chargeback").wait_for()
    page.get_by_test_id("namespaces").wait_for()
    rows = page.get_by_test_id("namespace-row")
    assert [rows.nth(i).get_attribute("data-namespace") for i in range(rows.count())] == [
        n["namespace"] for n in namespaces
    ]
    costs = page.get_by_test_id("namespace-cost")
    assert [costs.nth(i).inner_text() for i in range(costs.count())] == [money(n["cost"], currency) for n in namespaces]
    lines = page.get_by_test_id("chargeback-line")
    assert [lines.nth(i).get_attribute("data-owner") for i in range(lines.count())] == [
        line["owner"] for line in chargeback["lines"]
    ]
    totals = page.get_by_test_id("chargeback-total")
    assert [totals.nth(i).inner_text() for i in range(totals.count())] == [
        money(line["total"], currency) for line in chargeback["lines"]
    ]
    assert screen.text("chargeback-sum") == money(chargeback["total"], currency)
    assert "own line, owned by platform" in screen.text("chargeback-policy")
    assert page.get_by_test_id("chargeback-basis").get_attribute("data-basis") == chargeback["basis"] == "estimate"
    assert screen.text("chargeback-basis").startswith("Basis: estimate")
    unlabelled = [n["namespace"] for n in namespaces if not n["owner"]]
    shown = page.get_by_test_id("unlabelled-row")
    assert shown.count() == len(unlabelled) and all(
        ns in page.get_by_test_id("unlabelled").inner_text() for ns in unlabelled
    )
    assert "NaN" not in page.inner_text("body")
    assert screen.errors == []


def test_a_user_who_may_not_read_the_gate_application_is_refused(screen: Screen) -> None:
    page = screen.open("/?view=finops&user=no-gate")
    refusal = page.get_by_test_id("forbidden")
    refusal.wait_for()
    assert "argocd/cost-gate" in refusal.inner_text() and "lists no such application" in refusal.inner_text()
    assert page.get_by_test_id("namespace-row").count() == 0 and page.get_by_test_id("chargeback").count() == 0
    assert screen.calls == []  # nothing asked of the cost API
    assert screen.errors == []  # asked of Argo CD's list, which hides the gate (200): no failed load


def test_an_unavailable_cost_service_is_shown_as_such(outage_screen: Screen) -> None:
    page = outage_screen.open("/?app=argocd/web")
    problem = page.get_by_test_id("actual-error")
    problem.wait_for()
    assert problem.get_attribute("data-status") == "503"
    assert (
        "unavailable right now (HTTP 503)" in problem.inner_text()
        and "PostgreSQL is unavailable" in problem.inner_text()
    )
    assert page.get_by_test_id("daily-error").get_attribute("data-status") == "503"
    assert "NaN" not in page.inner_text("body")
    assert outage_screen.errors and outage_screen.unexpected_errors() == []  # only the 503s' own lines


def _demo_screen(browser: Browser, url: str, name: str) -> Iterator[Screen]:
    context = browser.new_context(viewport={"width": 1280, "height": 1400})
    try:
        view = Screen(context.new_page(), url.rstrip("/"), ui_world.ARTIFACTS)
        view.page.on("console", lambda m: view.errors.append(m.text) if m.type == "error" else None)
        view.page.on("pageerror", lambda exc: view.errors.append(f"page error: {exc}"))
        yield view
        view.shot(name)
    finally:
        context.close()


@pytest.fixture
def demo_screen(browser: Browser, demo: tuple[str, list[str]], request: pytest.FixtureRequest) -> Iterator[Screen]:
    yield from _demo_screen(browser, demo[0], request.node.name)


def _project(url: str, app: str) -> str:
    namespace, name = app.split(":")
    found = httpx.get(f"{url}api/v1/applications/{name}?appNamespace={namespace}", cookies={"argocd.token": "readonly"})
    return str(found.json()["spec"]["project"])


def _api(url: str, path: str, app: str) -> Any:
    return through_proxy(url, path, app, _project(url, app))


def test_finops_run_prints_the_page_and_shows_the_demo(demo: tuple[str, list[str]], demo_screen: Screen) -> None:
    url, printed = demo
    assert any("Argo CD UI extension:" in line for line in printed[:-1])  # also in the stack's URL list
    daily = _api(url, "/apps/argocd/web/daily?days=30", "argocd:web")
    trend = _api(url, "/apps/argocd/web/trend", "argocd:web")
    assert trend["change"] is not None  # the demo's two syncs
    past = [d for d in daily["days"][:-1] if d["final"] and d["hours"] == 24]
    assert len(past) >= 7 and all(d["cost"]["micros"] > 0 for d in past)  # the history load, recorded
    gateway = _api(url, "/apps/argocd/payments-gateway/trend", "argocd:payments-gateway")
    assert gateway["change"]["micros"] > 0  # demo-sync-2 added the gateway-canary Deployment
    page = demo_screen.open("/?app=argocd/web")
    page.get_by_test_id("trend-change").wait_for()
    assert demo_screen.text("monthly").endswith(" USD") and "NaN" not in page.inner_text("body")
    bars = page.get_by_test_id("daily-point")
    assert bars.count() == len(daily["days"]) == 30
    assert [bars.nth(i).get_attribute("data-amount") for i in range(30)] == [d["cost"]["amount"] for d in daily["days"]]
    page = demo_screen.open("/?app=argocd/payments-gateway")
    page.get_by_test_id("trend-change").wait_for()
    assert demo_screen.text("trend-change") == "+" + money(gateway["change"]["amount"], gateway["currency"])
    assert demo_screen.errors == []


SCREENSHOTS = {"cost-tab": ("/?app=argocd/web", "actual"), "cluster-view": ("/?view=finops", "chargeback")}


def test_the_readmes_screenshots_show_the_demo_fully_loaded(demo: tuple[str, list[str]], browser: Browser) -> None:
    """What ``make screenshots`` runs: the demo's argocd/web Cost tab and the cluster view, every
    card loaded, at a fixed viewport, saved as cost-tab.png and cluster-view.png (the Makefile
    copies them into docs/images/). Before any test here changes the demo's data."""
    ui_world.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name, (query, ready) in SCREENSHOTS.items():
        context = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
        try:
            view = Screen(context.new_page(), demo[0].rstrip("/"), ui_world.ARTIFACTS)
            view.page.on("console", lambda m, v=view: v.errors.append(m.text) if m.type == "error" else None)
            page = view.open(query)
            page.get_by_test_id(ready).wait_for()
            page.wait_for_function("() => document.querySelector('[data-testid=loading]') === null")
            assert "NaN" not in page.inner_text("body") and view.errors == [], name
            path = ui_world.ARTIFACTS / f"{name}.png"
            page.screenshot(path=str(path), full_page=True, animations="disabled", caret="hide")
            assert path.stat().st_size > 0
        finally:
            context.close()


def _anomaly_figures(page: Any, anomaly: dict[str, Any], currency: str) -> None:
    box = page.get_by_test_id("anomaly")
    box.wait_for()
    base = anomaly["baseline"]
    if anomaly["score"] is None:
        assert box.get_attribute("data-scored") == "false"
        assert anomaly["reason"] in page.get_by_test_id("anomaly-reason").inner_text()
        assert page.get_by_test_id("anomaly-badge").count() == 0
    else:
        assert box.get_attribute("data-anomalous") == str(anomaly["anomalous"]).lower()
        assert page.get_by_test_id("anomaly-score").inner_text() == anomaly["score"]
        badge = page.get_by_test_id("anomaly-badge").inner_text()
        assert badge == ("anomalous" if anomaly["anomalous"] else "usual")
        assert page.get_by_test_id("anomaly-run-rate").inner_text() == money(
            anomaly["runRatePerDay"]["amount"], currency
        )
    if base["days"]:
        assert page.get_by_test_id("anomaly-days").inner_text() == str(base["days"])
        assert page.get_by_test_id("anomaly-from").inner_text() == base["from"]
        assert page.get_by_test_id("anomaly-to").inner_text() == base["to"]
        if base["median"] is None:  # fewer days than a baseline needs: no median, and the page says why
            assert page.get_by_test_id("anomaly-median").count() == 0
            assert "too few for a median" in page.get_by_test_id("anomaly-baseline").inner_text()
        else:
            assert page.get_by_test_id("anomaly-median").inner_text() == money(base["median"]["amount"], currency)
            assert page.get_by_test_id("anomaly-mad").inner_text() == money(base["mad"]["amount"], currency)


def test_the_anomaly_score_with_its_baseline(
    demo: tuple[str, list[str]], demo_screen: Screen, database_url: str
) -> None:
    url = demo[0]
    actual = _api(url, "/apps/argocd/payments-gateway/actual", "argocd:payments-gateway")
    anomaly = actual["anomaly"]
    assert anomaly["baseline"]["days"] >= 7
    if ui_world.final_hours_today(database_url):
        assert anomaly["score"] is not None and anomaly["today"]["hours"] >= 1
    else:  # the demo ran in the first hour of a UTC day: today has no final hour yet
        assert anomaly["score"] is None and anomaly["reason"] == "no final hour of today yet"
    page = demo_screen.open("/?app=argocd/payments-gateway")
    _anomaly_figures(page, anomaly, anomaly["currency"])
    # an application too young for a baseline: the reason, and no badge
    young = _api(url, "/apps/team-apps/web/actual", "team-apps:web")["anomaly"]
    assert young["score"] is None and young["reason"].startswith("needs 7 days of history")
    page = demo_screen.open("/?app=team-apps/web")
    _anomaly_figures(page, young, "USD")
    assert "NaN" not in page.inner_text("body")
    assert demo_screen.errors == []


def test_rightsizing_advice_managed_vpas_and_warnings(demo: tuple[str, list[str]], demo_screen: Screen) -> None:
    url = demo[0]
    cart = _api(url, "/apps/argocd/shop-cart/rightsizing", "argocd:shop-cart")
    (vpa,) = cart["vpas"]
    currency = vpa["currency"]
    page = demo_screen.open("/?app=argocd/shop-cart")
    page.get_by_test_id("rightsizing").wait_for()
    assert demo_screen.text("rightsizing-monthly") == formatted_change(cart["monthly"]["amount"], currency)
    assert f"last {cart['window']['days']} days" in demo_screen.text(
        "rightsizing-header"
    ) and currency in demo_screen.text("rightsizing-header")
    assert demo_screen.text("vpa-monthly") == formatted_change(vpa["monthly"]["amount"], currency)
    lines = page.get_by_test_id("rs-line")
    expected = [
        (c, r, c_[r]) for c_ in vpa["containers"] for c, r in ((c_["container"], "cpu"), (c_["container"], "memory"))
    ]
    assert lines.count() == len(expected) == 2
    for i, (container, resource, line) in enumerate(expected):
        row = lines.nth(i)
        assert (row.get_attribute("data-container"), row.get_attribute("data-resource")) == (container, resource)
        assert row.get_by_test_id("rs-current").inner_text() == line["currentQuantity"]
        assert row.get_by_test_id("rs-suggested").inner_text() == line["suggestedQuantity"]
        assert row.get_by_test_id("rs-monthly").inner_text() == formatted_change(line["monthly"]["amount"], currency)
    assert page.get_by_test_id("rs-low-confidence").count() == 0 and page.get_by_test_id("vpa-managed").count() == 0
    # argocd/web's VPA is in Auto: the badge only, no advice
    web = _api(url, "/apps/argocd/web/rightsizing", "argocd:web")
    assert [v["managed"] for v in web["vpas"]] == [True]
    page = demo_screen.open("/?app=argocd/web")
    page.get_by_test_id("vpa-managed").wait_for()
    assert demo_screen.text("vpa-managed") == f"VPA applies this (mode {web['vpas'][0]['updateMode']})"
    assert page.get_by_test_id("rs-line").count() == 0
    # argocd/catalog: an unsettled recommendation, a memory limit below the upper bound, none yet
    catalog = _api(url, "/apps/argocd/catalog/rightsizing", "argocd:catalog")
    page = demo_screen.open("/?app=argocd/catalog")
    page.get_by_test_id("rightsizing").wait_for()
    unsettled = [c for v in catalog["vpas"] for c in v.get("containers", []) if not c["settled"]]
    assert page.get_by_test_id("rs-low-confidence").count() == len(unsettled) >= 1
    warnings = [
        w
        for v in catalog["vpas"]
        for w in [*v.get("warnings", []), *(x for c in v.get("containers", []) for x in c["warnings"])]
    ]
    shown = page.get_by_test_id("rs-warning")
    assert sorted(shown.nth(i).inner_text() for i in range(shown.count())) == sorted(warnings)
    assert any("below the VPA's upper bound" in w for w in warnings) and "the VPA has no recommendation yet" in warnings
    assert "NaN" not in page.inner_text("body")
    assert demo_screen.errors == []


def test_orphaned_pods_of_the_applications_namespace(demo: tuple[str, list[str]], demo_screen: Screen) -> None:
    url = demo[0]
    body = _api(url, "/apps/argocd/web/orphaned-pods", "argocd:web")
    assert [p["pod"] for p in body["pods"]] == ["debug-toolbox"]
    page = demo_screen.open("/?app=argocd/web")
    page.get_by_test_id("orphans").wait_for()
    _orphan_rows(page, body)
    assert demo_screen.errors == []


def _orphan_rows(page: Any, body: dict[str, Any]) -> None:
    rows = page.get_by_test_id("orphan-row")
    assert rows.count() == len(body["pods"]) >= 1
    for i, pod in enumerate(body["pods"]):
        row = rows.nth(i)
        owner = "bare pod" if pod["owner"] is None else f"{pod['owner']['kind']} {pod['owner']['name']}"
        assert (row.get_attribute("data-namespace"), row.get_attribute("data-pod")) == (pod["namespace"], pod["pod"])
        assert row.get_by_test_id("orphan-owner").inner_text() == owner
        assert row.get_by_test_id("orphan-cost").inner_text() == money(pod["cost"]["amount"], pod["currency"])
        assert row.get_by_test_id("orphan-hours").inner_text() == str(pod["hours"])
        assert pod["phase"] in row.inner_text()
    currency = body["pods"][0]["currency"]
    assert page.get_by_test_id("orphans-total").inner_text() == money(body["total"]["amount"], currency)


def test_cloud_estimates_with_their_age_and_a_stale_warning(
    demo: tuple[str, list[str]], demo_screen: Screen, database_url: str
) -> None:
    url = demo[0]
    (fresh,) = _api(url, "/apps/argocd/web/actual", "argocd:web")["cloudEstimates"]
    page = demo_screen.open("/?app=argocd/web")
    row = page.get_by_test_id("estimate-row")
    row.wait_for()
    assert row.get_attribute("data-source") == fresh["source"] and fresh["stale"] is False
    assert demo_screen.text("estimate-monthly") == money(fresh["monthly"]["amount"], fresh["currency"])
    assert demo_screen.text("estimate-resources") == str(fresh["resources"])
    assert demo_screen.text("estimate-unpriced") == str(fresh["unpriced"]) != "0"
    assert page.get_by_test_id("estimate-stale").count() == 0
    ui_world.age_estimate(database_url, ("argocd", "web"), days=8)  # CI last pushed it 8 days ago
    (stale,) = _api(url, "/apps/argocd/web/actual", "argocd:web")["cloudEstimates"]
    assert stale["stale"] is True
    page = demo_screen.open("/?app=argocd/web")
    page.get_by_test_id("estimate-stale").wait_for()
    assert demo_screen.text("estimate-age") == f"{stale['ageSeconds'] // 86400} days" == "8 days"
    assert "more than 7 days" in demo_screen.text("estimate-stale")
    assert demo_screen.errors == []


def test_the_data_quality_notice_only_when_something_explains_a_figure(
    screen: Screen, host: ArgoHost, demo: tuple[str, list[str]], demo_screen: Screen
) -> None:
    dq = through_proxy(host, "/data-quality", "argocd:web")
    assert dq["opencost"]["reachable"] is False  # the test world's OpenCost does not answer
    page = screen.open("/?app=argocd/web")
    page.get_by_test_id("data-quality").wait_for()
    items = page.get_by_test_id("dq-item")
    assert [items.nth(i).get_attribute("data-kind") for i in range(items.count())] == ["opencost"]
    assert dq["opencost"]["reason"] in items.first.inner_text()
    book = dq["pricing"]["pricebook"]
    assert f"{book['namespace']}/{book['name']} ({book['currency']})" in screen.text("dq-pricing")
    assert screen.errors == []
    # the demo's data is complete and priced, OpenCost answers: no notice at all
    calm = _api(demo[0], "/data-quality", "argocd:web")
    assert calm["opencost"]["reachable"] is True and calm["ledger"]["lost"] == 0 and calm["pricing"]["reason"] is None
    assert calm["unpriced"]["byHours"]["unpriced"] == 0 and calm["ledger"]["hoursBehind"] <= 2
    page = demo_screen.open("/?app=argocd/web")
    page.get_by_test_id("data-quality-ok").wait_for(state="attached")
    page.get_by_test_id("actual").wait_for()
    assert page.get_by_test_id("data-quality").count() == 0
    assert demo_screen.errors == []


def test_the_test_clusters_cards_say_what_is_missing(screen: Screen, host: ArgoHost) -> None:
    app = "argocd:web"
    rightsizing = through_proxy(host, "/apps/argocd/web/rightsizing", app)
    orphans = through_proxy(host, "/apps/argocd/web/orphaned-pods", app)
    anomaly = through_proxy(host, "/apps/argocd/web/actual", app)["anomaly"]
    assert rightsizing["available"] is False and orphans["pods"] == [] and anomaly["score"] is None
    page = screen.open("/?app=argocd/web")
    note = page.get_by_test_id("rightsizing-unavailable")
    note.wait_for()
    assert rightsizing["reason"] in note.inner_text()
    assert page.get_by_test_id("rightsizing-error").count() == 0  # a note, not an error
    assert "No orphaned pods in shop" in screen.text("orphans-empty")
    assert anomaly["reason"] in screen.text("anomaly-reason")
    assert "CI has not pushed one" in screen.text("estimates-empty")
    assert screen.errors == []


def test_the_cluster_view_ranks_anomalies_and_lists_orphaned_pods(
    demo: tuple[str, list[str]], demo_screen: Screen, database_url: str
) -> None:
    url = demo[0]
    gate = "argocd:cost-gate"
    ranking = _api(url, "/anomalies?limit=20", gate)
    orphans = _api(url, "/orphaned-pods", gate)
    page = demo_screen.open("/?view=finops")
    page.get_by_test_id("anomaly-ranking").wait_for()
    rows = page.get_by_test_id("anomaly-row")
    assert [rows.nth(i).get_attribute("data-app") for i in range(rows.count())] == [
        f"{a['app']['namespace']}/{a['app']['name']}" for a in ranking["applications"]
    ]
    for i, entry in enumerate(ranking["applications"]):
        row, anomaly = rows.nth(i), entry["anomaly"]
        assert row.get_by_test_id("anomaly-row-score").inner_text() == (anomaly["score"] or "—")
        assert row.get_attribute("data-anomalous") == str(anomaly["anomalous"]).lower()
        if anomaly["score"] is None:
            assert anomaly["reason"] in row.get_by_test_id("anomaly-row-note").inner_text()
    if ui_world.final_hours_today(database_url):
        assert ranking["scored"] >= 1
    else:  # the demo ran in the first hour of a UTC day: nothing to score today against yet
        assert ranking["scored"] == 0
        reasons = {a["anomaly"]["reason"] for a in ranking["applications"]}
        assert all(r == "no final hour of today yet" or r.startswith("needs 7 days of history") for r in reasons)
    assert f"{ranking['anomalous']} anomalous of {ranking['scored']} scored" in demo_screen.text("anomaly-summary")
    page.get_by_test_id("orphans").wait_for()
    _orphan_rows(page, orphans)
    assert "NaN" not in page.inner_text("body")
    assert demo_screen.errors == []


def _dark_hour() -> str:
    """The GPU world's hour collected without emissions, as the API names it."""
    return ui_world.gpu_world_hours()[1].strftime("%Y-%m-%dT%H:00Z")


def test_the_tab_shows_the_apps_gpus_and_kg_beside_its_cost(gpu_screen: Screen, gpu_host: ArgoHost) -> None:
    """argocd/web is recorded on ml, where research's train holds an A100 (ui_world.GPU_SCENARIO):
    3 x 3.0625 = 9.1875 over three hours, 3 GPU-hours for 9.00 of which 0.9 busy (10.00 a busy
    GPU-hour), and 2 x 1225 g = 2.450 kg in the two hours with emissions."""
    gpus = through_proxy(gpu_host, "/apps/argocd/web/gpus?days=30", "argocd:web")
    carbon = through_proxy(gpu_host, "/apps/argocd/web/carbon?days=30", "argocd:web")
    assert gpus["gpu"] == {
        "gpuHours": "3.000",
        "cost": {"amount": "9.00", "micros": 9_000_000},
        "busyGpuHours": "0.900",
        "costPerBusyGpuHour": "10.00",
    }
    assert carbon["cost"] == gpus["cost"] == {"amount": "9.19", "micros": 9_187_500} and carbon["currency"] == "USD"
    assert (carbon["grams"], carbon["kg"], carbon["hours"], carbon["hoursWithEmissions"]) == (2450, "2.450", 3, 2)
    assert carbon["hoursWithout"] == _dark_hour()
    assert carbon["factors"] == [{"kind": "node", "source": "opencost", "region": None, "hours": 2}]
    page = gpu_screen.open("/?app=argocd/web")
    page.get_by_test_id("footprint").wait_for()
    assert gpu_screen.text("footprint-cost") == "9.19 USD"
    assert gpu_screen.text("footprint-kg") == "2.450 kg CO2e"
    assert gpu_screen.text("footprint-gpu-hours") == "3.000"
    assert gpu_screen.text("footprint-gpu-cost") == "9.00 USD"
    assert "10.00 USD a busy GPU-hour" in page.get_by_test_id("footprint-card").inner_text()
    assert gpu_screen.text("footprint-factors") == "Factors: nodes: opencost (region not stated)."
    hours = gpu_screen.text("footprint-hours")
    assert "Emissions for 2 of 3 stored hours" in hours and f"none for {_dark_hour()}" in hours
    assert "NaN" not in page.inner_text("body")
    assert gpu_screen.errors == []


def test_the_cluster_view_shows_gpus_per_model_and_kg_per_team_and_namespace(
    gpu_screen: Screen, gpu_host: ArgoHost
) -> None:
    """ui_world.GPU_SCENARIO by hand, over three hours: research 3 GPU-hours for 9.00, serving
    2.55 for 1.53, the idle A100 3 for 9.00 and the idle T4 0.45 for 0.27 (19.80, 9 GPU-hours).
    Beside cost: research 9.1875 and 2450 g, serving 2.0925 and 558 g, idle 3 x (3.09 of idle GPUs
    + 0.95 of idle CPU and RAM) = 12.12 and 2 x (1495 + 121) = 3232 g: 23.40, the nodes' 3 x 7.80,
    and 6240 g, the nodes' 2 x 3120."""
    gate = "argocd:cost-gate"
    idle_a100, idle_t4 = f"__idle__/gpu:{ui_world.A100}", f"__idle__/gpu:{ui_world.T4}"
    gpus = through_proxy(gpu_host, "/gpus?days=30", gate)
    lines = [(x["team"], x["gpu_hours"], x["cost"], x["cost_per_busy_gpu_hour"]) for x in gpus["lines"]]
    assert lines == [
        ("research", "3.000", "9.00", "10.00"),
        ("serving", "2.550", "1.53", "0.60"),
        (idle_a100, "3.000", "9.00", None),
        (idle_t4, "0.450", "0.27", None),
    ]
    assert [(t["gpu_hours"], t["cost"]) for t in gpus["totals"]] == [("9.000", "19.80")]
    by_team = through_proxy(gpu_host, "/carbon?days=30&by=team", gate)
    by_namespace = through_proxy(gpu_host, "/carbon?days=30&by=namespace", gate)
    expected = [(9_187_500, 2450), (2_092_500, 558), (12_120_000, 3232)]
    assert [(x["team"], x["cost"]["micros"], x["grams"]) for x in by_team["lines"]] == [
        (name, *figures) for name, figures in zip(("research", "serving", "__idle__"), expected, strict=True)
    ]
    assert [(x["namespace"], x["cost"]["micros"], x["grams"]) for x in by_namespace["lines"]] == [
        (name, *figures) for name, figures in zip(("ml", "infer", "__idle__"), expected, strict=True)
    ]
    assert by_team["total"] == {"cost": {"amount": "23.40", "micros": 23_400_000}, "grams": 6240, "kg": "6.240"}
    assert (by_team["hoursStored"], by_team["hoursWithEmissions"], by_team["hoursWithout"]) == (3, 2, _dark_hour())
    page = gpu_screen.open("/?view=finops")
    page.get_by_test_id("gpus").wait_for()
    rows = page.get_by_test_id("gpu-line")
    assert [rows.nth(i).get_attribute("data-line") for i in range(rows.count())] == [x[0] for x in lines]
    shown = [
        (rows.nth(i).get_by_test_id("gpu-hours").inner_text(), rows.nth(i).get_by_test_id("gpu-cost").inner_text())
        for i in range(rows.count())
    ]
    assert shown == [(hours, money(cost, "USD")) for _, hours, cost, _ in lines]
    assert rows.nth(2).inner_text().startswith(f"Idle {ui_world.A100}")
    assert rows.nth(3).inner_text().startswith(f"Idle {ui_world.T4}")
    assert gpu_screen.text("gpu-total-cost") == "19.80 USD" and gpu_screen.text("gpu-total-hours") == "9.000"
    assert "GPU_BASIS request" in gpu_screen.text("gpu-bases")
    for by, body in (("team", by_team), ("namespace", by_namespace)):
        table = page.get_by_test_id(f"carbon-{by}")
        table.wait_for()
        cells = table.get_by_test_id("carbon-line")
        assert [cells.nth(i).get_attribute("data-line") for i in range(cells.count())] == [x[by] for x in body["lines"]]
        assert [cells.nth(i).get_by_test_id("carbon-cost").inner_text() for i in range(cells.count())] == [
            "9.19 USD",
            "2.09 USD",
            "12.12 USD",
        ]
        assert [cells.nth(i).get_by_test_id("carbon-kg").inner_text() for i in range(cells.count())] == [
            "2.450",
            "0.558",
            "3.232",
        ]
        assert table.get_by_test_id("carbon-total-kg").inner_text() == "6.240"
        assert table.get_by_test_id("carbon-total-cost").inner_text() == "23.40 USD"
    assert gpu_screen.text("carbon-factors") == (
        "Factors: nodes: opencost (region not stated), 6.240 kg CO2e over 2 hours."
    )
    assert f"Emissions for 2 of 3 stored hours; none for {_dark_hour()}" in gpu_screen.text("carbon-hours")
    assert "NaN" not in page.inner_text("body")
    assert gpu_screen.errors == []


def test_hours_without_emissions_are_said_not_shown_as_zero(screen: Screen, host: ArgoHost) -> None:
    """The test cluster's OpenCost serves no carbon estimates: no kg anywhere, and the pages say why."""
    carbon = through_proxy(host, "/apps/argocd/web/carbon", "argocd:web")
    assert carbon["grams"] is None and carbon["kg"] is None and carbon["hoursWithEmissions"] == 0
    assert carbon["hours"] > 0 and carbon["hoursWithout"]
    page = screen.open("/?app=argocd/web")
    page.get_by_test_id("footprint").wait_for()
    assert screen.text("footprint-kg") == "—"
    assert f"No emissions for the {carbon['hours']} stored hours" in screen.text("footprint-hours")
    assert screen.text("footprint-cost") == money(carbon["cost"]["amount"], carbon["currency"])
    teams = through_proxy(host, "/carbon?days=30&by=team", "argocd:cost-gate")
    namespaces = through_proxy(host, "/carbon?days=30&by=namespace", "argocd:cost-gate")
    for body in (teams, namespaces):
        assert body["total"]["grams"] is None and all(line["grams"] is None for line in body["lines"])
    page = screen.open("/?view=finops")
    page.get_by_test_id("carbon-team").wait_for()
    page.get_by_test_id("carbon-namespace").wait_for()
    kgs = page.get_by_test_id("carbon-kg")
    assert kgs.count() == len(teams["lines"]) + len(namespaces["lines"]) >= 2
    assert {kgs.nth(i).inner_text() for i in range(kgs.count())} == {"—"}
    assert "No emissions for the" in screen.text("carbon-hours") and "not 0" in screen.text("carbon-hours")
    assert "0.000" not in page.inner_text("body")
    assert screen.errors == []
