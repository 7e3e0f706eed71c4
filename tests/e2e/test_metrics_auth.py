"""We test these aspects of who may read ``cost_api``'s ``GET /metrics``, over real HTTP:

- without ``METRICS_TOKEN`` the route is 404, naming the variable;
- a missing or wrong bearer is 401 and the answer holds no metric; Argo CD's proxy headers (its
  secret header, an application, a user) are not a credential here, alone or with the proxy's
  secret sent as the bearer;
- the proxy's headers are not needed either, and the proxy's routes refuse the metrics token;
- the token is read from ``SECRETS_DIR`` as the other tokens are.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from infra.postgres import Database
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import TOKEN

METRICS = "test-metrics-token"
PROXY_HEADERS = {"X-Finops-Proxy-Token": TOKEN, "Argocd-Application-Name": "argocd:cost-gate"}


@pytest.fixture(scope="module")
def metrics_url(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "cost_api", METRICS_TOKEN=METRICS) as url:
        yield url


def scrape(url: str, token: str | None = METRICS, **headers: str) -> httpx.Response:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.get(url + "/metrics", headers=headers, timeout=30)


@pytest.mark.parametrize(
    ("token", "headers"),
    [
        (None, {}),
        ("wrong", {}),
        (None, PROXY_HEADERS),  # the proxy's secret header and the gate app: not a scrape credential
        (TOKEN, PROXY_HEADERS),  # the proxy's secret as the bearer
        ("wrong", {**PROXY_HEADERS, "Argocd-Username": "admin"}),
    ],
    ids=["no-token", "wrong-token", "proxy-headers-alone", "proxy-secret-as-bearer", "forged-with-wrong-token"],
)
def test_without_the_metrics_token_nothing_is_read(
    db: Database, metrics_url: str, token: str | None, headers: dict[str, str]
) -> None:
    response = scrape(metrics_url, token, **headers)
    assert response.status_code == 401
    assert "finops_" not in response.text and "METRICS" not in response.text


def test_proxy_headers_are_not_needed(db: Database, metrics_url: str) -> None:
    response = scrape(metrics_url)
    assert response.status_code == 200 and "finops_metrics_scrape_duration_seconds" in response.text
    refused = httpx.get(metrics_url + "/api/v1/namespaces", headers={"Authorization": f"Bearer {METRICS}"})
    assert refused.status_code == 403


def test_unconfigured_metrics_are_404_naming_the_variable(stack: Stack) -> None:
    with serve_function(stack, "cost_api") as url:
        response = scrape(url)
    assert response.status_code == 404
    assert "METRICS_TOKEN" in response.json()["error"]


def test_the_token_is_read_from_secrets_dir(db: Database, stack: Stack, tmp_path: Path) -> None:
    (tmp_path / "METRICS_TOKEN").write_text("from-the-file\n")
    with serve_function(stack, "cost_api", SECRETS_DIR=str(tmp_path)) as url:
        assert scrape(url, "from-the-file").status_code == 200
        assert scrape(url).status_code == 401
