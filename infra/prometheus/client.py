"""The Prometheus HTTP API client: instant queries (``/api/v1/query``), values exact as Decimal.

Instant queries only: the allocation method (``infra.prometheus.source``) asks for whole-hour
sums with subqueries evaluated once at the hour's end (one answer per series, not 60 samples).
Values arrive as strings (``"0.25"``) and become ``Decimal`` from that text, never through
``float``. ``NaN`` and infinities are refused (``PrometheusUnavailable``): no query of the method
can produce them from sane data. Errors:

* unreachable, a timeout, a 5xx answer or a body that is not the documented envelope:
  ``PrometheusUnavailable`` (a ``TemporaryError``, the run answers 503 and its trigger retries),
  after ``retries`` retries with exponential backoff (none starts after ``retry_until``);
* a 4xx answer (``bad_data``: a query Prometheus rejects, 401/403: a wrong bearer token):
  ``SourceMisconfigured``, one line naming Prometheus's own error; retrying cannot help.

The optional bearer token (``PROMETHEUS_BEARER_TOKEN``) is sent as ``Authorization: Bearer`` and
never logged or put in a message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import httpx
from pydantic import SecretStr

from finops.errors import PrometheusUnavailable, SourceMisconfigured
from infra.retries import RETRY_STATUSES, RetryPolicy, json_client, transport_problem


@dataclass(frozen=True)
class Sample:
    """One series of an instant vector: its labels and its exact value."""

    labels: dict[str, str]
    value: Decimal


class PrometheusClient:
    """Reads Prometheus's HTTP API (``/api/v1/query``)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        retries: int = 2,
        backoff: float = 0.5,
        bearer_token: SecretStr | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._retries = RetryPolicy("Prometheus", self.base_url, retries, backoff, PrometheusUnavailable)
        auth = {"Authorization": f"Bearer {bearer_token.get_secret_value()}"} if bearer_token is not None else {}
        self._http = json_client(self.base_url, timeout, transport, auth)

    def close(self) -> None:
        self._http.close()

    def query(self, promql: str, at: datetime, *, retry_until: float | None = None) -> list[Sample]:
        """The instant vector ``promql`` evaluated at ``at`` (millisecond precision)."""
        form = {"query": promql, "time": f"{at.timestamp():.3f}", "timeout": f"{self.timeout:g}s"}
        body = self._post("/api/v1/query", form, retry_until)
        try:
            envelope = json.loads(body)
            data = envelope["data"]
            if envelope.get("status") != "success" or data.get("resultType") != "vector":
                raise ValueError(f"status {envelope.get('status')!r}, resultType {data.get('resultType')!r}")
            return [_sample(item) for item in data["result"]]
        except (ValueError, KeyError, TypeError, AttributeError, InvalidOperation) as exc:
            raise PrometheusUnavailable(
                f"Prometheus at {self.base_url} answered /api/v1/query with a body that is not its documented "
                f"envelope: {type(exc).__name__}: {exc}"
            ) from exc

    def build_version(self) -> str:
        """Prometheus's version (``/api/v1/status/buildinfo``, one attempt): the question ``finops
        doctor`` asks first. ``PrometheusUnavailable`` when it cannot be had."""
        path = "/api/v1/status/buildinfo"
        try:
            response = self._http.get(path)
            version = response.json()["data"]["version"] if response.is_success else None
        except httpx.HTTPError as exc:
            raise PrometheusUnavailable(f"Prometheus at {self.base_url}: {transport_problem(exc)}") from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise PrometheusUnavailable(
                f"Prometheus at {self.base_url} answered {path} with a body that is not its documented envelope"
            ) from exc
        if not isinstance(version, str):
            raise PrometheusUnavailable(
                f"Prometheus at {self.base_url} answered {path} with HTTP {response.status_code}"
            )
        return version

    def _post(self, path: str, form: dict[str, str], retry_until: float | None) -> bytes:
        def attempt_once() -> tuple[bytes, None] | tuple[None, str]:
            try:
                response = self._http.post(path, data=form)
            except httpx.HTTPError as exc:
                return None, transport_problem(exc)
            if response.status_code < 400:
                return response.content, None
            problem = f"HTTP {response.status_code}: {_error_text(response.content)}"
            if response.status_code not in RETRY_STATUSES:
                raise SourceMisconfigured(
                    f"Prometheus at {self.base_url} rejected a query ({problem}); query: {_short(form['query'])}"
                )
            return None, problem

        return self._retries.run(path, attempt_once, retry_until)


def _sample(item: Any) -> Sample:
    labels = item["metric"]
    _, text = item["value"]
    value = Decimal(text)
    if not value.is_finite():
        raise ValueError(f"the series {labels} has the value {text}")
    return Sample({str(k): str(v) for k, v in labels.items()}, value)


def _error_text(body: bytes) -> str:
    """Prometheus's ``errorType: error`` on one line (or the start of a body that is not JSON)."""
    try:
        envelope = json.loads(body)
        return f"{envelope.get('errorType', 'error')}: {envelope.get('error', '')}".replace("\n", " ")
    except ValueError:
        return body[:200].decode("utf-8", "replace").replace("\n", " ")


def _short(promql: str) -> str:
    flat = " ".join(promql.split())
    return flat if len(flat) <= 160 else flat[:157] + "..."
