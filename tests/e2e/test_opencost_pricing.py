"""We test these aspects of pricing with OpenCost's own prices (``PRICING_SOURCE=opencost`` or a
FinOpsProvider ``default`` whose block is not ``Pricebook``), with the sandbox OpenCost serving
cloud-priced answers of a small scenario, a sandbox Kubernetes API holding no PriceBook, and the
``finops`` command over a real PostgreSQL:

- collection -> ``finops report chargeback`` -> ``finops export focus`` -> ``finops report
  budgets``: every figure is the scenario's node prices times its requests (computed here, not by
  the code under test), in the declared currency, with no PriceBook anywhere; the coverage names
  the OpenCost pricing version;
- a declaration that cannot be used (no currency) fails the run naming the variable or the field,
  and stores nothing;
- a switch of pricing source inside a period (PriceBook -> OpenCost, OpenCost -> FinOpsProvider)
  in one currency: the report is made and its coverage lists both versions with their hours;
- mixed currencies inside one cluster's period are refused, OpenCost's first or the PriceBook's
  first;
- ``describe_pricing`` (what ``finops doctor`` shows) reads the source and currency, writing nothing;
- ``reconcile`` renders no PriceBook into OpenCost's pricing ConfigMap while OpenCost's prices are
  declared, and the FinOpsProvider's status says the source and currency (or why it cannot be used).
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from finops.pricing import Setting
from infra.kube import KubeClient
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.cluster import cluster_objects
from sandbox.localstack import Stack, serve_function
from tests.logs import LOG_DIR as TEST_LOGS
from usecases.collect_allocations.pricing import describe_pricing

FINOPS = "finops.stakater.com/v1alpha1"
CENT = Decimal("0.01")
CONFIGMAP = "finops-operator-custom-pricing-configs"  # OPENCOST_PRICING_CONFIGMAP's default
CLUSTER = "oc"
# Prices exact in binary, so the sandbox's float arithmetic is exact too.
CPU_HOURLY, RAM_HOURLY = Decimal("0.0625"), Decimal("0.0078125")
SCENARIO = {
    "cluster": CLUSTER,
    "nodes": [
        {"name": "node-a", "cpuCores": 4, "ramGiB": 16, "gpus": 0, "cpuHourly": str(CPU_HOURLY),
         "ramGiBHourly": str(RAM_HOURLY)},
    ],
    "namespaces": [
        {"name": "shop", "labels": {"team": "checkout", "cost-center": "cc-1"}},
        {"name": "books", "labels": {"team": "reading", "cost-center": "cc-2"}},
    ],
    "workloads": [  # usage below the requests: the requests are billed
        {"namespace": "shop", "kind": "Deployment", "name": "web", "replicas": 1, "node": "node-a",
         "containers": [{"name": "app", "request": {"cpu": 1, "ramGiB": 2}, "usage": {"cpu": 0.5, "ramGiB": 1}}]},
        {"namespace": "books", "kind": "Deployment", "name": "api", "replicas": 1, "node": "node-a",
         "containers": [{"name": "app", "request": {"cpu": 0.5, "ramGiB": 4}, "usage": {"cpu": 0.25, "ramGiB": 1}}]},
    ],
}  # fmt: skip
HOURLY = {  # per team: cores x price + GiB x price
    "checkout": 1 * CPU_HOURLY + 2 * RAM_HOURLY,
    "reading": Decimal("0.5") * CPU_HOURLY + 4 * RAM_HOURLY,
}
IDLE_HOURLY = 4 * CPU_HOURLY + 16 * RAM_HOURLY - sum(HOURLY.values())  # capacity nobody requested
DAY_1, DAY_2, DAY_3 = "2026-11-18", "2026-11-19", "2026-11-20"
POLICY = """
owner_label: team
cost_center_label: cost-center
idle: separate
idle_owner: platform
currency: {currency}
budgets:
  - {{owner: checkout, amount: "10.00"}}
"""


@pytest.fixture(scope="module")
def opencost() -> Iterator[sandbox_opencost.OpenCostServer]:
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(SCENARIO)) as server:
        yield server


@pytest.fixture(scope="module")
def kube() -> Iterator[sandbox_kube.KubeServer]:
    """The scenario's objects and nothing else: no PriceBook, no FinOpsProvider."""
    with sandbox_kube.serve(objects=cluster_objects(sandbox_opencost.parse_scenario(SCENARIO))) as server:
        yield server


@pytest.fixture
def cluster(kube: sandbox_kube.KubeServer, db: Database) -> Iterator[sandbox_kube.KubeServer]:
    """The cluster as each test leaves it is cleared: no PriceBook, no FinOpsProvider."""
    yield kube
    for book in kube.store.list(FINOPS, "pricebooks"):
        kube.store.delete(FINOPS, "pricebooks", book["metadata"]["namespace"], book["metadata"]["name"])
    if kube.store.get(FINOPS, "finopsproviders", None, "default") is not None:
        kube.store.delete(FINOPS, "finopsproviders", None, "default")


def finops(database_url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    binary = os.path.join(os.path.dirname(sys.executable), "finops")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PRICING_", "CLUSTER_ID"))}
    environment |= {"DATABASE_URL": database_url, **env}
    return subprocess.run([binary, *args], env=environment, capture_output=True, text=True, check=False)


def collect(
    database_url: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer, day: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """``finops collect`` of one UTC day, in this process's way (the collect_allocations settings)."""
    following = {DAY_1: DAY_2, DAY_2: DAY_3, DAY_3: "2026-11-21"}[day]
    settings = {"OPENCOST_URL": opencost.url, "KUBE_API_URL": kube.url, "CLUSTER_ID": CLUSTER, "PING_TOKEN": "t"}
    return finops(database_url, "collect", "--from", day, "--to", following, **settings, **env)


def policy(tmp_path: Path, currency: str) -> str:
    path = tmp_path / f"policy-{currency}.yaml"
    path.write_text(POLICY.format(currency=currency))
    return str(path)


def chargeback(database_url: str, policy_path: str) -> subprocess.CompletedProcess[str]:
    return finops(
        database_url, "report", "chargeback", "--month", "2026-11", "--policy", policy_path, "--format", "json"
    )


def totals(report: dict[str, Any]) -> dict[str, Decimal]:
    return {line["owner"]: Decimal(line["total"]) for line in report["lines"]}


def stored(db: Database) -> tuple[int, int]:
    """(ledger hours, allocation rows) stored."""
    with db.connection() as conn:
        hours = conn.execute("SELECT count(*) AS n FROM allocation_hours").fetchone()
        rows = conn.execute("SELECT count(*) AS n FROM provider_allocations").fetchone()
    assert hours is not None and rows is not None
    return hours["n"], rows["n"]


def book(currency: str) -> dict[str, Any]:
    """A PriceBook (its rates are not what OpenCost's answers are priced with here)."""
    return {
        "apiVersion": FINOPS,
        "kind": "PriceBook",
        "metadata": {"name": "standard", "namespace": "finops", "annotations": {"finops.stakater.com/active": "true"}},
        "spec": {"currency": currency, "rates": {"cpuHour": "0.05", "ramGbHour": "0.005"}},
    }


def provider(block: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": FINOPS, "kind": "FinOpsProvider", "metadata": {"name": "default"}, "spec": block}


def opencost_eur(**extra: str) -> dict[str, str]:
    return {"PRICING_SOURCE": "opencost", "PRICING_CURRENCY": "EUR", **extra}


def test_collection_report_focus_and_budget_in_the_declared_currency_with_no_pricebook(
    database_url: str, opencost: sandbox_opencost.OpenCostServer, cluster: sandbox_kube.KubeServer, tmp_path: Path
) -> None:
    for day in (DAY_1, DAY_2):
        out = collect(database_url, opencost, cluster, day, **opencost_eur())
        assert out.returncode == 0, out.stderr
    eur = policy(tmp_path, "EUR")

    out = chargeback(database_url, eur)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    hours = 48
    expected = {team: hourly * hours for team, hourly in HOURLY.items()}
    got = totals(report)
    assert report["currency"] == "EUR"
    assert {team: got[team] for team in expected} == expected  # 3.75 and 3.00 EUR
    assert sum(got.values()) == (sum(HOURLY.values()) + IDLE_HOURLY) * hours  # idle on its own line: 18.00
    coverage = report["coverage"]["clusters"][CLUSTER]
    assert (coverage["final"], coverage["unpriced"], coverage["currencies"]) == (hours, 0, ["EUR"])
    assert coverage["pricing"] == [
        {
            "source": "opencost",
            "name": "PRICING_SOURCE",
            "currency": "EUR",
            "hours": ["2026-11-18T00:00Z..2026-11-19T23:00Z"],
        }
    ]

    (tmp_path / "focus").mkdir()
    out = finops(database_url, "export", "focus", "--month", "2026-11", "--policy", eur, "--to", f"{tmp_path}/focus/")
    assert out.returncode == 0, out.stderr
    [export] = (tmp_path / "focus").glob("*.csv")
    with export.open() as f:
        rows = list(csv.DictReader(f))
    assert {row["BillingCurrency"] for row in rows} == {"EUR"}
    assert sum(Decimal(row["BilledCost"]) for row in rows) == sum(got.values())

    out = finops(database_url, "report", "budgets", "--month", "2026-11", "--policy", eur, "--format", "json")
    assert out.returncode == 0, out.stderr
    [budget] = json.loads(out.stdout)["budgets"]
    assert Decimal(budget["month_to_date"]) == expected["checkout"]


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"PRICING_SOURCE": "opencost"}, "PRICING_CURRENCY"),
        ({"PRICING_SOURCE": "opencost", "PRICING_CURRENCY": "euro"}, "PRICING_CURRENCY"),
        (opencost_eur(ALLOCATION_SOURCE="prometheus", PROMETHEUS_URL="http://127.0.0.1:9"), "ALLOCATION_SOURCE"),
    ],
    ids=["no-currency", "bad-currency", "prometheus"],
)
def test_an_unusable_setting_fails_the_run_naming_the_variable(
    database_url: str,
    opencost: sandbox_opencost.OpenCostServer,
    cluster: sandbox_kube.KubeServer,
    db: Database,
    env: dict[str, str],
    named: str,
) -> None:
    out = collect(database_url, opencost, cluster, DAY_1, **env)
    assert out.returncode == 2 and named in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert stored(db) == (0, 0)


def test_a_finopsprovider_without_a_currency_fails_the_run_naming_the_field(
    database_url: str, opencost: sandbox_opencost.OpenCostServer, cluster: sandbox_kube.KubeServer, db: Database
) -> None:
    cluster.store.apply_manifests([provider({"awsoptions": {"pricingModelSource": "OnDemand"}})])
    out = collect(database_url, opencost, cluster, DAY_1)  # the provider decides, whatever the settings say
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "FinOpsProvider default: spec.awsoptions.currency: required" in out.stderr, out.stderr
    assert stored(db) == (0, 0)


def test_a_switch_inside_the_period_lists_both_pricing_versions(
    database_url: str, opencost: sandbox_opencost.OpenCostServer, cluster: sandbox_kube.KubeServer, tmp_path: Path
) -> None:
    cluster.store.apply_manifests([book("EUR")])
    assert collect(database_url, opencost, cluster, DAY_1).returncode == 0  # the PriceBook path (the default)
    assert collect(database_url, opencost, cluster, DAY_2, **opencost_eur()).returncode == 0
    cluster.store.apply_manifests([provider({"gcpoptions": {"pricingModelSource": "OpenCost", "currency": "EUR"}})])
    assert collect(database_url, opencost, cluster, DAY_3).returncode == 0

    out = chargeback(database_url, policy(tmp_path, "EUR"))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    # OpenCost's figures whichever version, 5.625 rounded once to the cent (half to even)
    assert totals(report)["checkout"] == (HOURLY["checkout"] * 72).quantize(CENT, ROUND_HALF_EVEN)
    assert report["coverage"]["clusters"][CLUSTER]["pricing"] == [
        {
            "source": "pricebook",
            "name": "finops/standard",
            "currency": "EUR",
            "hours": [f"{DAY_1}T00:00Z..{DAY_1}T23:00Z"],
        },
        {
            "source": "opencost",
            "name": "PRICING_SOURCE",
            "currency": "EUR",
            "hours": [f"{DAY_2}T00:00Z..{DAY_2}T23:00Z"],
        },
        {
            "source": "opencost",
            "name": "FinOpsProvider default",
            "currency": "EUR",
            "hours": [f"{DAY_3}T00:00Z..{DAY_3}T23:00Z"],
        },
    ]


@pytest.mark.parametrize("opencost_first", [True, False], ids=["opencost-then-pricebook", "pricebook-then-opencost"])
def test_mixed_currencies_in_one_clusters_period_are_refused(
    database_url: str,
    opencost: sandbox_opencost.OpenCostServer,
    cluster: sandbox_kube.KubeServer,
    tmp_path: Path,
    opencost_first: bool,
) -> None:
    if opencost_first:
        assert collect(database_url, opencost, cluster, DAY_1, **opencost_eur()).returncode == 0
        cluster.store.apply_manifests([book("USD")])
        assert collect(database_url, opencost, cluster, DAY_2).returncode == 0
    else:
        cluster.store.apply_manifests([book("USD")])
        assert collect(database_url, opencost, cluster, DAY_1).returncode == 0
        assert collect(database_url, opencost, cluster, DAY_2, **opencost_eur()).returncode == 0
    for currency in ("EUR", "USD"):
        out = chargeback(database_url, policy(tmp_path, currency))
        assert out.returncode != 0 and out.stdout == "", out.stdout
        assert "the period mixes currencies" in out.stderr and "EUR, USD" in out.stderr, out.stderr


def test_reconcile_leaves_opencosts_pricing_alone_and_says_the_source_in_the_providers_status(
    database_url: str, opencost: sandbox_opencost.OpenCostServer, cluster: sandbox_kube.KubeServer
) -> None:
    store = cluster.store
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "opencost"}}
    deployment = {  # restarted when its pricing changes
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "opencost", "namespace": "opencost"},
        "spec": {"selector": {"matchLabels": {"app": "opencost"}}, "template": {"metadata": {}}},
    }
    store.apply_manifests([namespace, deployment, book("USD"), provider({"gcpoptions": {"currency": "EUR"}})])
    world = Stack(database_url, opencost.url, cluster.url, "t", CLUSTER, log_dir=TEST_LOGS)
    with serve_function(world, "reconcile") as url:

        def full_pass() -> dict[str, Any]:
            answer = httpx.post(url, json={}, headers={"Authorization": "Bearer t"}, timeout=30)
            assert answer.status_code == 200, answer.text
            status = store.get(FINOPS, "finopsproviders", None, "default")
            assert status is not None
            return dict(status["status"])

        status = full_pass()  # OpenCost's prices: the active PriceBook is not rendered into OpenCost
        assert store.get("v1", "configmaps", "opencost", CONFIGMAP) is None
        assert (status["pricingSource"], status["currency"], status["conditions"][0]["status"]) == (
            "opencost",
            "EUR",
            "True",
        )
        assert "prices come from OpenCost, in EUR" in status["conditions"][0]["message"]

        store.patch(FINOPS, "finopsproviders", None, "default", {"spec": {"gcpoptions": {"currency": None}}})
        status = full_pass()  # unusable: not ready, naming the field; still nothing rendered
        assert store.get("v1", "configmaps", "opencost", CONFIGMAP) is None
        assert status["conditions"][0]["reason"] == "InvalidPricing" and "pricingSource" not in status
        assert "spec.gcpoptions.currency: required" in status["conditions"][0]["message"]

        store.patch(
            FINOPS, "finopsproviders", None, "default", {"spec": {"gcpoptions": {"pricingModelSource": "Pricebook"}}}
        )
        status = full_pass()  # the PriceBook path: the book is rendered, as before
        assert (status["pricingSource"], status.get("currency")) == ("pricebook", None)
        rendered = store.get("v1", "configmaps", "opencost", CONFIGMAP)
        assert rendered is not None and '"CPU": "0.05"' in rendered["data"]["default.json"]
    store.delete("v1", "configmaps", "opencost", CONFIGMAP)


def test_finops_run_with_opencost_prices_prints_the_chargeback_with_no_pricebook(
    database_url: str, db: Database
) -> None:
    """``finops run --once --pricing opencost``: the demo cluster without its PriceBooks, every
    hour priced and stamped with the OpenCost pricing version in the declared USD."""
    done = subprocess.run(
        [str(Path(sys.executable).with_name("finops")), "run", "--once", "--hours", "2", "--pricing", "opencost"],
        env={**os.environ, "DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert len(re.findall(r"^  \S+Z  HTTP 200  success  rows=\d+$", out, re.MULTILINE)) == 2, out
    assert re.search(r"^Cost per team and namespace, cluster demo, .* UTC \(USD\)$", out, re.MULTILINE), out
    assert re.search(r"^TOTAL\s+[1-9][\d.]*$", out, re.MULTILINE), out
    with db.connection() as conn:
        versions = conn.execute("SELECT source, name, currency FROM pricebooks").fetchall()
        unpriced = conn.execute("SELECT count(*) AS n FROM allocation_hours WHERE currency IS NULL").fetchone()
    assert versions == [{"source": "opencost", "name": "PRICING_SOURCE", "currency": "USD"}]
    assert unpriced == {"n": 0}


def test_finops_run_refuses_opencost_prices_with_the_prometheus_source() -> None:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("finops")), "run", "--pricing", "opencost", "--source", "prometheus"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "--pricing opencost needs --source opencost" in done.stderr, done.stderr


def test_describe_pricing_says_the_source_and_currency_without_writing(cluster: sandbox_kube.KubeServer) -> None:
    """What ``finops doctor`` shows: read from the cluster and the settings, no database at all."""
    kube = KubeClient.from_url(cluster.url)
    view = describe_pricing(kube, Setting())
    assert (view.source, view.currency, view.label) == ("pricebook", None, None)
    assert view.warning == "no PriceBook in the cluster: rows are stored unpriced"
    cluster.store.apply_manifests([book("USD")])
    view = describe_pricing(kube, Setting())
    assert (view.source, view.currency, view.label, view.warning) == ("pricebook", "USD", "finops/standard", None)
    cluster.store.apply_manifests([provider({"onpremoptions": {"pricingModelSource": "custom", "currency": "CHF"}})])
    view = describe_pricing(kube, Setting())  # the provider wins over the book and the settings
    assert (view.source, view.currency, view.label) == ("opencost", "CHF", "opencost (FinOpsProvider default)")
