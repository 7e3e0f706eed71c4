"""We test these aspects of the per-application reads of ``cost_api`` (Argo CD proxy extension):

- the latest actual, scope marked and "measured at install" flagged; the trend compares with
  the previous *sync* record of the same scope only;
- authorization: the proxy's secret header is required, the ``Argocd-Application-Name`` header
  must name the application in the path, and data is looked up by the header's identity;
  a forged or mismatched request gets 403 and no data;
- an application without a record yet: 200 with ``recorded`` false and the reason, on each of
  ``/actual``, ``/trend`` and ``/daily`` (a state, not an error: the Cost tab asks for every
  application, and the browser logs every 4xx as a console error).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from infra.postgres import Database
from sandbox.localstack import Stack, serve_function

PROXY = "test-proxy-token"


@pytest.fixture(scope="session")
def api_url(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY) as url:
        yield url


def add_record(
    db: Database,
    app_ns: str,
    app: str,
    monthly: int,
    *,
    on: str = "sync",
    scope: str = "namespace",
    share_monthly: int | None = None,
    at: str = "2026-11-29T10:00:00Z",
) -> None:
    share = None
    if scope == "application":
        share = {
            "pods": ["p"],
            "cost_micros": 1,
            "monthly_micros": share_monthly,
            "breakdown": {"cpu": 1},
            "idle_micros": 0,
            "idle_monthly_micros": 0,
            "efficiency": {"cpu": None, "ram": None, "total": None},
        }
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on, scope,"
            " measured_at, window_start, window_end, measured_hours, cost_micros, monthly_micros, breakdown, share)"
            " VALUES ('test', %s, %s, 'shop', %s, %s, %s, %s, %s, 24, %s, %s, '{\"cpu\": 1}', %s)",
            (
                app_ns,
                app,
                on,
                scope,
                at,
                at,
                at,
                monthly // 30,
                monthly,
                None if share is None else __import__("json").dumps(share),
            ),
        )


def get(url: str, path: str, app: str | None, token: str | None = PROXY) -> httpx.Response:
    headers = {}
    if app is not None:
        headers["Argocd-Application-Name"] = app
    if token is not None:
        headers["X-Finops-Proxy-Token"] = token
    return httpx.get(url + path, headers=headers)


def test_actual_and_trend(api_url: str, db: Database) -> None:
    add_record(db, "argocd", "web", 90_000_000, on="install", at="2026-11-27T10:00:00Z")
    add_record(db, "argocd", "web", 120_000_000, at="2026-11-28T10:00:00Z")
    add_record(db, "argocd", "web", 150_000_000, at="2026-11-29T10:00:00Z")
    actual = get(api_url, "/api/v1/apps/argocd/web/actual", "argocd:web")
    assert actual.status_code == 200, actual.text
    body: dict[str, Any] = actual.json()
    assert body["namespace"]["monthly"] == {"amount": "150.00", "micros": 150_000_000}
    assert (body["scope"], body["measuredAtInstall"], body["application"]) == ("namespace", False, None)
    trend = get(api_url, "/api/v1/apps/argocd/web/trend", "argocd:web").json()
    assert trend["change"]["amount"] == "30.00" and trend["change"]["percent"] == "25.0"


def test_currency_is_null_when_no_stored_row_prices_the_window(api_url: str, db: Database) -> None:
    # No allocation row of shop overlaps these windows: the amounts' currency is unknown, never guessed
    # (with rows, it is theirs: tests/e2e/test_ui_extension.py checks "USD" against /daily's).
    add_record(db, "argocd", "web", 120_000_000, at="2026-11-28T10:00:00Z")
    add_record(db, "argocd", "web", 150_000_000, at="2026-11-29T10:00:00Z")
    assert get(api_url, "/api/v1/apps/argocd/web/actual", "argocd:web").json()["currency"] is None
    assert get(api_url, "/api/v1/apps/argocd/web/trend", "argocd:web").json()["currency"] is None


def test_install_records_are_flagged_and_never_a_baseline(api_url: str, db: Database) -> None:
    add_record(db, "argocd", "web", 90_000_000, on="install", at="2026-11-27T10:00:00Z")
    assert get(api_url, "/api/v1/apps/argocd/web/actual", "argocd:web").json()["measuredAtInstall"] is True
    add_record(db, "argocd", "web", 120_000_000, at="2026-11-28T10:00:00Z")
    trend = get(api_url, "/api/v1/apps/argocd/web/trend", "argocd:web").json()
    assert trend["previous"] is None and trend["change"] is None


def test_trend_never_compares_scopes(api_url: str, db: Database) -> None:
    add_record(db, "argocd", "web", 120_000_000, at="2026-11-28T10:00:00Z")  # namespace scope
    add_record(db, "argocd", "web", 200_000_000, scope="application", share_monthly=40_000_000)
    trend = get(api_url, "/api/v1/apps/argocd/web/trend", "argocd:web").json()
    assert trend["scope"] == "application" and trend["latest"]["monthly"]["amount"] == "40.00"
    assert trend["previous"] is None


@pytest.mark.parametrize(
    ("path", "app", "token"),
    [
        ("/api/v1/apps/argocd/web/actual", "argocd:web", None),  # no proxy secret: forged
        ("/api/v1/apps/argocd/web/actual", "argocd:web", "guess"),
        ("/api/v1/apps/argocd/web/actual", None, PROXY),
        ("/api/v1/apps/argocd/web/actual", "team-apps:web", PROXY),  # allowed on another app
        ("/api/v1/apps/argocd/web/actual", "argocd:web-2", PROXY),
        ("/api/v1/apps/argocd/web/trend", "argocd", PROXY),
    ],
    ids=["no-secret", "wrong-secret", "no-app-header", "other-namespace", "other-name", "malformed-header"],
)
def test_forged_or_mismatched_requests_get_403_and_no_data(
    api_url: str, db: Database, path: str, app: str | None, token: str | None
) -> None:
    add_record(db, "argocd", "web", 150_000_000)
    add_record(db, "team-apps", "web", 99_000_000)
    response = get(api_url, path, app, token)
    assert response.status_code == 403
    assert "150.00" not in response.text and "99.00" not in response.text


@pytest.mark.parametrize("view", ["actual", "trend", "daily"])
def test_an_application_without_a_record_is_said_so_with_200(api_url: str, db: Database, view: str) -> None:
    add_record(db, "argocd", "web", 150_000_000)
    answer = get(api_url, f"/api/v1/apps/argocd/nope/{view}", "argocd:nope")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "app": {"namespace": "argocd", "name": "nope"},
        "recorded": False,
        "reason": "no cost record for application argocd/nope yet",
    }
    assert get(api_url, f"/api/v1/apps/argocd/web/{view}", "argocd:web").json()["recorded"] is True
