"""We test these aspects of the Argo CD UI extension (ui/), in headless Chromium, against the real
local stack through the Argo CD stand-in (sandbox/argocd_host) and its proxy:

- the application tab shows the API's figures, to the cent and with the currency: monthly
  projection, last 24 h, the breakdown by resource, workload idle, the scope, the change since
  the previous sync; the daily chart has one bar per day of the API's history, in order;
- an application measured only at install says so and has no trend; a namespace-scope record is
  labelled as such; an application deployed to another cluster gets the notice and no API call;
  an application without a record gets the "no record yet" state, not an error;
- the cluster view lists the namespaces, the month's chargeback lines (idle and shared) and the
  unlabelled namespaces as the API does; a user who may not read the gate application sees the
  refusal and no figure; a 503 of the cost service is shown as such;
- ``finops run`` (``make run``) prints the page's URL, and there the demo's argocd/web tab shows its
  cost, its change since the previous sync and one bar per day of its history;
- no page logs a console error (beyond the browser's own line for an expected error status).
Every test saves a screenshot under .local/artifacts/ui-extension/.
"""

from __future__ import annotations

from typing import Any

import httpx
from playwright.sync_api import Browser

from sandbox.argocd_host import ArgoHost
from tests.e2e import ui_world
from tests.e2e.ui_world import Screen, finops_run, money, through_proxy

# The module's fixtures (one world and one browser for the module): ui_world.py.
host, browser, screen = ui_world.host, ui_world.browser, ui_world.screen
outage_host, outage_screen = ui_world.outage_host, ui_world.outage_screen

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
    assert currency == "USD"
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
    assert "NaN" not in page.inner_text("body")
    assert screen.errors_besides(404) == []


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
    assert "argocd/cost-gate" in refusal.inner_text() and "HTTP 403" in refusal.inner_text()
    assert page.get_by_test_id("namespace-row").count() == 0 and page.get_by_test_id("chargeback").count() == 0
    assert screen.calls == []  # nothing asked of the cost API
    assert screen.errors_besides(403) == []


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
    assert outage_screen.errors_besides(503) == []


def test_finops_run_prints_the_page_and_shows_the_demo(browser: Browser, database_url: str) -> None:
    with finops_run(database_url, hours=26) as (url, printed):
        assert any("Argo CD UI extension:" in line for line in printed[:-1])  # also in the stack's URL list
        app = httpx.get(url + "api/v1/applications/web?appNamespace=argocd", cookies={"argocd.token": "readonly"})
        project = app.json()["spec"]["project"]
        daily = through_proxy(url, "/apps/argocd/web/daily?days=30", "argocd:web", project)
        trend = through_proxy(url, "/apps/argocd/web/trend", "argocd:web", project)
        assert trend["change"] is not None  # the demo's two syncs
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        try:
            view = Screen(context.new_page(), url.rstrip("/"), ui_world.ARTIFACTS)
            view.page.on("console", lambda m: view.errors.append(m.text) if m.type == "error" else None)
            page = view.open("/?app=argocd/web")
            page.get_by_test_id("trend-change").wait_for()
            assert view.text("monthly").endswith(" USD") and "NaN" not in page.inner_text("body")
            assert page.get_by_test_id("daily-point").count() == len(daily["days"]) == 30
            view.shot("make-run-argocd-web")
            assert view.errors == []
        finally:
            context.close()
