"""We test these aspects of the Prometheus adapter and the Prometheus source's configuration:

- sample values are exact Decimals read from Prometheus's strings (never through float);
- the bearer token is sent, and never appears in an error;
- unreachable, 5xx and a body that is not the envelope are ``PrometheusUnavailable`` (retryable,
  503) after the retries; a rejected query (400) is ``SourceMisconfigured``, one line, not retried;
- ``ALLOCATION_SOURCE=prometheus`` requires ``PROMETHEUS_URL`` (and the default aggregation) and
  does not require ``OPENCOST_URL``; the opencost source requires it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import httpx
import pytest
from pydantic import SecretStr

from finops.errors import PrometheusUnavailable, SourceMisconfigured
from infra.prometheus import PrometheusClient
from infra.settings import CollectAllocationsSettings, ConfigError, load

AT = datetime(2026, 11, 20, 11, 0, tzinfo=UTC)


def client(handler: httpx.MockTransport, **kw: object) -> PrometheusClient:
    return PrometheusClient("http://prometheus.test", backoff=0, transport=handler, **kw)  # type: ignore[arg-type]


def vector(*values: str) -> bytes:
    result = [{"metric": {"namespace": f"ns{i}"}, "value": [AT.timestamp(), v]} for i, v in enumerate(values)]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


def test_values_are_exact_decimals_and_the_query_is_evaluated_at_the_given_time() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=vector("0.1", "12345678901234567.125"))

    samples = client(httpx.MockTransport(answer), bearer_token=SecretStr("s3cret")).query("up", AT)
    assert [(s.labels, s.value) for s in samples] == [
        ({"namespace": "ns0"}, Decimal("0.1")),
        ({"namespace": "ns1"}, Decimal("12345678901234567.125")),
    ]
    form = dict(httpx.QueryParams(seen[0].content.decode()))
    assert form["query"] == "up" and form["time"] == f"{AT.timestamp():.3f}"
    assert seen[0].headers["Authorization"] == "Bearer s3cret"


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(503, text="overloaded"),
        httpx.Response(200, text="<html>"),
        httpx.Response(200, content=vector("NaN")),
    ],
    ids=["5xx", "not-json", "nan"],
)
def test_unavailable_or_garbled_answers_are_retryable(response: httpx.Response) -> None:
    calls = 0

    def answer(_: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return response

    with pytest.raises(PrometheusUnavailable) as caught:
        client(httpx.MockTransport(answer), retries=2, bearer_token=SecretStr("s3cret")).query("up", AT)
    assert caught.value.http_status == 503 and "s3cret" not in caught.value.message
    assert calls == (3 if response.status_code == 503 else 1)


def test_unreachable_is_retryable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(PrometheusUnavailable, match="after 2 attempts: ConnectError"):
        client(httpx.MockTransport(refuse), retries=1).query("up", AT)


def test_a_rejected_query_is_one_line_and_not_retried() -> None:
    calls = 0

    def reject(_: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        body = {"status": "error", "errorType": "bad_data", "error": "1:5: parse error:\nunclosed left parenthesis"}
        return httpx.Response(400, json=body)

    with pytest.raises(SourceMisconfigured) as caught:
        client(httpx.MockTransport(reject)).query("sum(", AT)
    assert calls == 1 and "\n" not in caught.value.message
    assert "bad_data: 1:5: parse error: unclosed left parenthesis" in caught.value.message


BASE = {"DATABASE_URL": "postgresql://finops@db.example/finops", "PING_TOKEN": "t"}


def test_the_prometheus_source_needs_its_url_and_not_opencosts() -> None:
    settings = load(
        CollectAllocationsSettings, {**BASE, "ALLOCATION_SOURCE": "prometheus", "PROMETHEUS_URL": "http://p:9090/"}
    )
    assert (settings.PROMETHEUS_URL, settings.OPENCOST_URL) == ("http://p:9090", None)
    with pytest.raises(ConfigError, match="PROMETHEUS_URL is required when ALLOCATION_SOURCE is prometheus"):
        load(CollectAllocationsSettings, {**BASE, "ALLOCATION_SOURCE": "prometheus"})
    with pytest.raises(ConfigError, match="OPENCOST_URL is required when ALLOCATION_SOURCE is opencost"):
        load(CollectAllocationsSettings, BASE)
    with pytest.raises(ConfigError, match="OPENCOST_AGGREGATE must be"):
        load(
            CollectAllocationsSettings,
            {
                **BASE,
                "ALLOCATION_SOURCE": "prometheus",
                "PROMETHEUS_URL": "http://p",
                "OPENCOST_AGGREGATE": "namespace",
            },
        )
    with pytest.raises(ConfigError, match="PROMETHEUS_URL: 'ftp://p' is not an http"):
        load(CollectAllocationsSettings, {**BASE, "ALLOCATION_SOURCE": "prometheus", "PROMETHEUS_URL": "ftp://p"})
