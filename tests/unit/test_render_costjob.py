"""We test these aspects of ``finops render costjob``:

- a CostJob becomes the shipped hourly ping with its schedule, its function, and a ping body
  naming the CostJob; ``spec.resources`` replaces the container's resources whole;
- an interval cron cannot express is refused with the file and CostJob named;
- the rendered CronJob validates strictly as a Kubernetes object.
"""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from cli.main import main

COSTJOBS = """
apiVersion: finops.stakater.com/v1alpha1
kind: CostJob
metadata: {name: allocations, namespace: team-a}
spec: {type: ResourceCostCollection, interval: 2h, resources: {requests: {cpu: 20m}}}
---
apiVersion: finops.stakater.com/v1alpha1
kind: CostJob
metadata: {name: charges, namespace: team-a}
spec: {type: SubscriptionChargeCollection, interval: 60m}
"""


def test_costjobs_render_to_pings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "costjobs.yaml"
    path.write_text(COSTJOBS)
    assert main(["render", "costjob", str(path)]) == 0
    allocations, charges = list(yaml.safe_load_all(capsys.readouterr().out))
    assert allocations["metadata"]["name"] == "costjob-team-a-allocations"
    assert (allocations["spec"]["schedule"], charges["spec"]["schedule"]) == ("0 */2 * * *", "0 * * * *")
    container = allocations["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["FUNCTION_URL"].startswith("http://collect-allocations.")
    assert container["command"] == ["finops", "ping"]
    assert env["COST_JOB"] == "team-a/allocations"  # finops ping sends it as the body's costJob
    assert container["resources"] == {"requests": {"cpu": "20m"}}  # replaced whole
    charge_env = {
        e["name"]: e.get("value")
        for e in charges["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert charge_env["FUNCTION_URL"].startswith("http://collect-charges.")
    for cron in (allocations, charges):
        kubernetes_validate.validate(cron, "1.33", strict=True)


def test_an_unschedulable_interval_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(COSTJOBS.replace("interval: 2h", "interval: 45m"))
    assert main(["render", "costjob", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "CostJob team-a/allocations" in err and "45m" in err
