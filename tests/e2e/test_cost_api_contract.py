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

REPORTS = Path(__file__).resolve().parents[2] / ".local" / "artifacts" / "schemathesis"  # each run's output
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
            "--max-examples=5",
            "--seed=20261206",
            "--generation-deterministic",
            "--workers=1",  # threads: CPython 3.11's ast.parse is not thread-safe (hypothesis parses lambdas)
            "--request-timeout=30",
            "--suppress-health-check=all",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"{principal}.txt").write_text(run.stdout + run.stderr)
    first = min((i for i in (run.stdout.find(" FAILURES "), run.stdout.find(" ERRORS ")) if i >= 0), default=0)
    assert run.returncode == 0, f"{REPORTS / principal}.txt:\n{run.stdout[first : first + 8000]}{run.stderr[-2000:]}"


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("/api/v1/anomalies?limit=", "limit"),
        ("/api/v1/chargeback?month=&by=", "month"),
        ("/api/v1/chargeback?by=", "by"),
        ("/api/v1/namespaces?days=", "days"),
        ("/api/v1/budgets?month=%C2%B3", "month"),
        ("/api/v1/budgets?month=2026-1%C2%B3", "month"),
        ("/api/v1/idle-ranking?limit=%D9%A3", "limit"),  # an Arabic-Indic digit is not a digit here
        ("/api/v1/namespaces/Not_A_Namespace", "namespace"),
        ("/api/v1/namespaces?days=" + "9" * 5000, "days"),  # past int()'s 4,300 digits: still a 400
    ],
)
def test_what_the_document_refuses_is_a_400_naming_the_parameter(api: str, query: str, named: str) -> None:
    answer = httpx.get(api + query, headers=PRINCIPALS["gate-user"], timeout=30)
    assert answer.status_code == 400 and answer.json()["error"].startswith(f"{named}: "), answer.text
    assert "\n" not in answer.json()["error"]


def test_a_method_the_document_does_not_list_is_405_with_allow(api: str) -> None:
    for method, path, allow in (
        ("TRACE", "/api/v1/namespaces", "GET, HEAD"),
        ("DELETE", "/api/v1/apps/argocd/web/actual", "GET, HEAD"),
        ("PUT", "/api/v1/apps/argocd/web/cloud-estimate", "GET, HEAD, POST"),
        ("POST", "/api/v1/openapi.json", "GET, HEAD"),
    ):
        answer = httpx.request(method, api + path, headers=PRINCIPALS["gate-user"], timeout=30)
        assert (answer.status_code, answer.headers.get("Allow")) == (405, allow), (method, path, answer.text)
    assert httpx.request("TRACE", api + "/api/v1/nothing-here", timeout=30).status_code == 404
