"""We test these aspects of the monitoring layer (knative/monitoring/), offline:

- the PrometheusRule's groups are a valid Prometheus rule file (``promtool check rules``) and
  behave as tests/deploy/monitoring/rules_test.yaml says (``promtool test rules``): the
  month-to-date and unallocated-share recording rules, each alert firing when it should and not
  before, and replicas' identical answers counted once;
- every alert and every recording rule is exercised by that file, and every metric the rules read
  is one ``cost_api``'s ``/metrics`` exposes (a renamed family cannot leave a rule reading nothing);
- the ScrapeConfig scrapes the cost-api Service's cluster-local URL at ``/metrics`` with the Secret
  key the Service reads as ``METRICS_TOKEN``, and lets the families' labels win;
- our schemas of the operator's kinds (tests/deploy/schemas/, run by test_schemas.py) reject a
  misspelt field and a rule both recording and alerting.

promtool is Debian's ``prometheus`` package: ``make test`` installs it as root; elsewhere
``sudo apt-get install prometheus``. Without it these tests fail saying so.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from functions.cost_api import metrics
from tests.deploy import manifests
from tests.deploy.test_schemas import _validator

ROOT = Path(__file__).resolve().parents[2]
UNIT_TESTS = Path(__file__).resolve().parent / "monitoring" / "rules_test.yaml"
EXPORTER = [
    ROOT / "functions" / "cost_api" / "metrics.py",
    *(
        ROOT / "usecases" / "cost_api" / name
        for name in ("metric_families.py", "app_metrics.py", "budget_views.py", "resource_metrics.py")
    ),
]


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail(
            "promtool is not installed: `make test` installs it as root, else `sudo apt-get install prometheus`"
        )
    return found


def _rule() -> dict[str, Any]:
    return manifests.named("PrometheusRule", "finops", "monitoring")


def _rules() -> list[dict[str, Any]]:
    return [rule for group in _rule()["spec"]["groups"] for rule in group["rules"]]


@pytest.fixture
def rule_dir(tmp_path: Path) -> Path:
    """The PrometheusRule's groups as a plain rule file, beside a copy of the unit tests."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": _rule()["spec"]["groups"]}, sort_keys=False))
    shutil.copy(UNIT_TESTS, tmp_path / "rules_test.yaml")
    return tmp_path


def test_promtool_checks_the_rules(rule_dir: Path) -> None:
    result = subprocess.run(
        [_promtool(), "check", "rules", "rules.yaml"], cwd=rule_dir, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in result.stdout


def test_promtool_unit_tests_pass(rule_dir: Path) -> None:
    result = subprocess.run(
        [_promtool(), "test", "rules", "rules_test.yaml"], cwd=rule_dir, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_rule_is_exercised_by_the_unit_tests() -> None:
    tests = yaml.safe_load(UNIT_TESTS.read_text())["tests"]
    alerts = {case["alertname"] for test in tests for case in test.get("alert_rule_test", [])}
    firing = {case["alertname"] for test in tests for case in test.get("alert_rule_test", []) if case.get("exp_alerts")}
    exprs = " ".join(case["expr"] for test in tests for case in test.get("promql_expr_test", []))
    for rule in _rules():
        if "alert" in rule:
            assert rule["alert"] in alerts & firing, f"{rule['alert']} is never seen firing in {UNIT_TESTS.name}"
        else:
            assert rule["record"] in exprs, f"{rule['record']} is never evaluated in {UNIT_TESTS.name}"


def test_the_rules_read_only_families_the_endpoint_exposes() -> None:
    exposed = {name for path in EXPORTER for name in re.findall(r'"(finops_[a-z_]+)"', path.read_text())}
    read = {name for rule in _rules() for name in re.findall(r"\bfinops_[a-z_]+\b", rule["expr"])}
    assert read and read <= exposed, f"not exposed by /metrics: {sorted(read - exposed)}"


def test_the_scrape_reaches_the_cost_api_service_with_its_metrics_token() -> None:
    (scrape,) = manifests.of_kind("ScrapeConfig", "monitoring")
    service = manifests.named("Service", "cost-api")
    meta = service["metadata"]
    spec = scrape["spec"]
    (static,) = spec["staticConfigs"]
    assert static["targets"] == [f"{meta['name']}.{meta['namespace']}.svc.cluster.local"]
    assert spec["metricsPath"] == metrics.PATH and spec["honorLabels"] is True
    token = manifests.container_env(manifests.service_container(service))["METRICS_TOKEN"]
    credentials = spec["authorization"]["credentials"]
    assert spec["authorization"]["type"] == "Bearer"
    assert (credentials["name"], credentials["key"]) == (token.ref, token.key)
    assert scrape["metadata"]["namespace"] == meta["namespace"], "the operator reads the Secret in its own namespace"


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        ("ScrapeConfig", lambda spec: spec.update(scrapeIntervall="1m")),
        ("ScrapeConfig", lambda spec: spec["authorization"]["credentials"].update(keys="METRICS_TOKEN")),
        ("PrometheusRule", lambda spec: spec["groups"][0]["rules"][0].update(alert="Both")),
        ("PrometheusRule", lambda spec: spec["groups"][1]["rules"][0].update(fore="15m")),
    ],
    ids=["scrape-field", "credentials-field", "record-and-alert", "rule-field"],
)
def test_our_schemas_reject_what_the_operator_would(kind: str, change: Any) -> None:
    obj = copy.deepcopy(manifests.of_kind(kind, "monitoring")[0])
    validator = _validator(obj)
    assert validator.is_valid(obj)
    change(obj["spec"])
    assert not validator.is_valid(obj)
