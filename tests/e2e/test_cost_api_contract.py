"""We test these aspects of ``cost_api``'s OpenAPI document (``GET /api/v1/openapi.json``), the
contract the UI and every client rely on, with Schemathesis (its CLI, every check it runs by
default) against the served function over a scratch PostgreSQL holding collected hours and an
application's record:

- as the gate application's user (cluster views), as an application's user (its own routes,
  the Argo CD headers naming it) and without the proxy's headers: no 5xx, no failed check;
  every answer has a declared status and body, what the document allows is accepted, what it
  does not is refused with 400, and a method it does not list is 405 with ``Allow``;
- the run is bounded and repeatable: a few examples per operation, deterministic generation,
  a fixed seed (which implies no example database).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from infra.postgres import Database
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import Pinger
from tests.e2e.test_cost_api_apps import add_record

PROXY = "contract-proxy-token"
CI = "contract-ci-token"  # CI's push is enabled (and never authorised: no principal holds this bearer)
GATE = "argocd:cost-gate"
APP = ("argocd", "web")
PRINCIPALS = {
    "gate-user": {"X-Finops-Proxy-Token": PROXY, "Argocd-Application-Name": GATE},
    "application-user": {"X-Finops-Proxy-Token": PROXY, "Argocd-Application-Name": ":".join(APP)},
    "no-headers": {},
}
# The application user's paths name its application (any other is a 403, which says little).
APP_PATH = f'[parameters]\n"path.appNamespace" = "{APP[0]}"\n"path.appName" = "{APP[1]}"\n'


@pytest.fixture(scope="module")
def api(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    policy = tmp_path_factory.mktemp("policy") / "policy.yaml"
    policy.write_text("owner_label: team\ncost_center_label: cost-center\nidle: separate\ncurrency: USD\n")
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, CI_TOKEN=CI, POLICY_PATH=str(policy), THREADS="4") as url:
        yield url


@pytest.fixture
def world(ping: Pinger, db: Database) -> None:
    """Collected hours of the test cluster (the last three) and one record of argocd/web."""
    assert ping({}).status_code == 200
    add_record(db, *APP, 150_000_000)


@pytest.mark.parametrize("principal", list(PRINCIPALS))
def test_schemathesis_finds_no_failed_check_and_no_5xx(
    api: str, world: None, principal: str, tmp_path: Path, stack: Stack
) -> None:
    cli = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert cli, "schemathesis is missing: make install (it is in the dev extras of pyproject.toml)"
    config = tmp_path / "schemathesis.toml"
    config.write_text(APP_PATH if principal == "application-user" else "")
    headers = [arg for name, value in PRINCIPALS[principal].items() for arg in ("-H", f"{name}: {value}")]
    assert httpx.get(api + "/api/v1/openapi.json", timeout=10).status_code == 200
    run = subprocess.run(
        [
            cli,
            "--config-file",
            str(config),
            "--no-color",
            "run",
            api + "/api/v1/openapi.json",
            *headers,
            "--max-examples=8",
            "--seed=20261206",
            "--generation-deterministic",
            "--workers=2",
            "--request-timeout=30",
            "--suppress-health-check=all",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout[-12000:] + run.stderr[-3000:]
    assert "No issues found" in run.stdout or " passed" in run.stdout, run.stdout[-3000:]
