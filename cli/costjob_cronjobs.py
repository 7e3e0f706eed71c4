"""``finops render costjob FILE...``: the operator's CostJobs as CronJobs pinging our functions.

Each CostJob becomes a copy of the shipped hourly ping (``knative/cronjobs.yaml``), so the
scheduled-time and authentication logic stay in one place, with:

- the schedule from ``spec.interval`` (``finops.costjobs.schedule_for``: the operator's six values,
  any other interval cron expresses cleanly, and a clear error for the rest, never a silent daily);
- the ping naming the CostJob, so the function records the run in its status and honours its
  timeouts;
- ``spec.resources`` replacing the ping container's resources whole, as the operator did.

The CronJobs live in the functions' namespace (where the ping token is), named
``costjob-<namespace>-<name>``; the operator's per-namespace copies of the database DSN are gone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from finops.costjobs import parse_costjob
from finops.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "knative" / "cronjobs.yaml"
URLS = {
    "collect-allocations": "http://collect-allocations.finops.svc.cluster.local",
    "collect-charges": "http://collect-charges.finops.svc.cluster.local",
}


def _template() -> dict[str, Any]:
    try:
        docs = list(yaml.safe_load_all(TEMPLATES.read_text()))
    except OSError as exc:
        raise InvalidInput(f"the CronJob template {TEMPLATES} is missing: run from a checkout") from exc
    return next(d for d in docs if d and d.get("kind") == "CronJob")


def render_costjob(costjob: dict[str, Any]) -> dict[str, Any]:
    spec = parse_costjob(costjob)
    cron = copy.deepcopy(_template())
    name = f"costjob-{spec.namespace}-{spec.name}"[:52]  # CronJob names are at most 52 characters
    cron["metadata"]["name"] = name
    cron["metadata"].setdefault("labels", {})["finops.stakater.com/costjob"] = f"{spec.namespace}.{spec.name}"
    cron["spec"]["schedule"] = spec.schedule
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item for item in container["env"]}
    env["CRONJOB"]["value"] = name
    env["FUNCTION_URL"]["value"] = URLS[spec.target_service]
    if container.get("command") != ["finops", "ping"]:
        raise InvalidInput(f"the CronJob template {TEMPLATES} changed: its container no longer runs `finops ping`")
    # `finops ping` (cli/ops.py) sends the CostJob's reference, with trigger "costjob".
    container["env"].append({"name": "COST_JOB", "value": f"{spec.namespace}/{spec.name}"})
    if spec.resources is not None:
        container["resources"] = dict(spec.resources)  # replaced whole, as the operator did
    return cron


def render_files(paths: Iterable[str]) -> str:
    """Every CostJob in ``paths`` rendered; errors name the file and the CostJob."""
    out = []
    for path in paths:
        try:
            docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
        except (OSError, yaml.YAMLError) as exc:
            raise InvalidInput(f"{path}: {exc}") from exc
        for doc in docs:
            if doc.get("kind") != "CostJob":
                continue
            try:
                out.append(render_costjob(doc))
            except InvalidInput as exc:
                raise InvalidInput(f"{path}: {exc.message}") from exc
    if not out:
        raise InvalidInput("no CostJob found in the given files")
    return yaml.safe_dump_all(out, sort_keys=False)
