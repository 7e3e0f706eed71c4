"""The OpenCost client: httpx with an injectable transport, explicit timeouts and bounded retries.

Connection errors, timeouts and 5xx answers are retried with exponential backoff; what is still
failing, or an answer that is not OpenCost's documented envelope, becomes ``OpenCostUnavailable``
(a ``TemporaryError``: the caller answers 503 and its trigger retries). A 404 on any path is
``EndpointMissing`` (not retried): an OpenCost without the assets API answers so, and the
collector then stores its hours without assets. Filter values are validated as Kubernetes names
before they reach a query string.

Why an overall deadline on top of httpx's timeouts: httpx's read timeout bounds each read, so an
OpenCost that trickles its answer (a byte every 50 ms) never trips it and would hold a run until
Knative kills it. Each attempt therefore streams the answer and checks a monotonic deadline
(``timeout`` seconds from the request's start) between chunks; past it the attempt fails like a
timeout (retried, then ``OpenCostUnavailable`` naming the deadline). One read still blocks at most
the read timeout, so an attempt ends within twice ``timeout`` in the worst case. A caller with a
time budget passes ``retry_until``: no retry starts after it (the attempt under way finishes).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from typing import IO, Any

import httpx
from pydantic import TypeAdapter, ValidationError

from finops.errors import InvalidInput, OpenCostUnavailable
from finops.labels import validate_namespace
from infra.heap import relaxed_gc
from infra.opencost.assets import ASSET_RESPONSE, Assets, parse_assets
from infra.opencost.carbon import CARBON_PATH, CARBON_RESPONSE, parse_carbon
from infra.opencost.models import RESPONSE, SUMMARY_RESPONSE, Allocation, SummaryAllocation, SummarySet
from infra.opencost.stream import read_allocations
from infra.retries import RETRY_STATUSES, RetryPolicy, json_client, transport_problem


def _rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def namespace_filter(namespaces: Sequence[str], *, exclude: bool = False) -> str:
    """``namespace:"a","b"`` in OpenCost's filter language, each name validated first;
    ``exclude`` gives ``namespace!:"a","b"`` (every allocation in none of them)."""
    if not namespaces:
        raise InvalidInput("namespace filter: at least one namespace is required")
    checked = [validate_namespace(ns, field="namespace filter") for ns in namespaces]
    return ("namespace!:" if exclude else "namespace:") + ",".join(f'"{ns}"' for ns in checked)


class OversizedAnswer(OpenCostUnavailable):
    """OpenCost's answer outgrew the size allowed for one request."""


class EndpointMissing(OpenCostUnavailable):
    """OpenCost answered 404: this version does not serve the path (e.g. ``/assets``)."""


class Spooled:
    """An ``/allocation`` answer in a temporary file (deleted on ``close``), read back in bounded
    windows: ``allocations()`` yields ``(key, Allocation)`` and fails like ``allocation()`` does
    on an error envelope or a bad field."""

    def __init__(self, file: IO[bytes], origin: str) -> None:
        self.file = file
        self.origin = origin

    def allocations(self) -> Iterator[tuple[str, Allocation]]:
        self.file.seek(0)
        return read_allocations(self.file, self.origin)

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Spooled:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OpenCostClient:
    """Reads OpenCost's allocation API."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._retries = RetryPolicy("OpenCost", self.base_url, retries, backoff, OpenCostUnavailable)
        self._http = json_client(self.base_url, timeout, transport)

    def close(self) -> None:
        self._http.close()

    def allocation(
        self,
        start: datetime,
        end: datetime,
        *,
        aggregate: str,
        accumulate: bool = False,
        include_idle: bool = False,
        namespaces: Sequence[str] | None = None,
        retry_until: float | None = None,
    ) -> list[dict[str, Allocation]]:
        """``GET /allocation`` over ``[start, end)``: one map (key → Allocation) per step set.
        ``retry_until`` (a ``time.monotonic()`` value, the caller's time budget): no retry starts
        after it, so a failing OpenCost costs the caller at most one more attempt."""
        params = _params(start, end, aggregate, accumulate, include_idle, namespaces)
        data = self._envelope("/allocation", params, RESPONSE, retry_until)
        return [step_set or {} for step_set in data]

    def spool_allocation(
        self,
        start: datetime,
        end: datetime,
        *,
        aggregate: str,
        include_idle: bool = False,
        namespaces: Sequence[str] | None = None,
        exclude_namespaces: bool = False,
        retry_until: float | None = None,
        max_bytes: int | None = None,
    ) -> Spooled:
        """``GET /allocation`` over ``[start, end)`` accumulated into one set, written to a
        temporary file (Python's temporary directory: ``/var/tmp`` in the Services). ``namespaces``
        filters (``exclude_namespaces``: all but those); ``max_bytes`` raises ``OversizedAnswer``."""
        params = _params(start, end, aggregate, True, include_idle, namespaces, exclude_namespaces)
        file = tempfile.TemporaryFile(prefix="opencost-")  # noqa: SIM115 (Spooled closes it)
        try:
            self._get("/allocation", params, retry_until, spool=file, max_bytes=max_bytes)
            return Spooled(file, f"OpenCost at {self.base_url} answered /allocation")
        except BaseException:
            file.close()
            raise

    def allocation_summary(
        self,
        start: datetime,
        end: datetime,
        *,
        aggregate: str,
        accumulate: bool = True,
        namespaces: Sequence[str] | None = None,
    ) -> list[dict[str, SummaryAllocation]]:
        """``GET /allocation/summary``: condensed records (efficiency inputs), one map per set."""
        params = _params(start, end, aggregate, accumulate, False, namespaces)
        data = self._envelope("/allocation/summary", params, SUMMARY_RESPONSE)
        return [_summary_set(item) for item in data.get("sets") or []]

    def assets(self, start: datetime, end: datetime, *, retry_until: float | None = None) -> Assets:
        """``GET /assets`` over ``[start, end)``, accumulated into one set: the window's nodes,
        disks and load balancers (``filterTypes``: only those). ``EndpointMissing`` on a 404."""
        params = {
            "window": f"{_rfc3339(start)},{_rfc3339(end)}",
            "accumulate": "true",
            "filterTypes": "Node,Disk,LoadBalancer",
        }
        data = self._envelope("/assets", params, ASSET_RESPONSE, retry_until)
        return parse_assets(data, f"OpenCost at {self.base_url} answered /assets")

    def carbon(self, start: datetime, end: datetime, *, retry_until: float | None = None) -> dict[str, Decimal]:
        """``GET /assets/carbon`` over ``[start, end)``: tonnes CO2e per asset key
        (``infra.opencost.carbon``). ``EndpointMissing`` on a 404 (carbon estimates not enabled)."""
        params = {"window": f"{_rfc3339(start)},{_rfc3339(end)}"}
        data = self._envelope(CARBON_PATH, params, CARBON_RESPONSE, retry_until)
        return parse_carbon(data, f"OpenCost at {self.base_url} answered {CARBON_PATH}")

    def _envelope(
        self, path: str, params: dict[str, str], shape: TypeAdapter[Any], retry_until: float | None = None
    ) -> Any:
        """``data`` of OpenCost's documented envelope, validated; anything else is OpenCost's fault."""
        body = self._get(path, params, retry_until)
        try:
            with relaxed_gc():
                envelope = shape.validate_json(body)
        except ValidationError as exc:
            raise OpenCostUnavailable(
                f"OpenCost at {self.base_url} answered {path} with a body that is not its documented "
                f"envelope: {_first_error(exc)}"
            ) from exc
        code, data = envelope.get("code"), envelope.get("data")
        if code != 200 or data is None:
            raise OpenCostUnavailable(
                f"OpenCost at {self.base_url} answered {path} with code {code}: {envelope.get('message') or 'no data'}"
            )
        return data

    def _fetch(
        self, path: str, params: dict[str, str], spool: IO[bytes] | None = None, max_bytes: int | None = None
    ) -> tuple[int, bytes]:
        """One attempt: status and whole body, within ``timeout`` seconds overall. With ``spool``,
        a successful body goes to that file (emptied first) and an empty body is returned."""
        deadline = time.monotonic() + self.timeout
        received = 0
        if spool is not None:
            spool.seek(0)
            spool.truncate()
        with self._http.stream("GET", path, params=params) as response:
            chunks: list[bytes] = []
            to_file = spool is not None and response.status_code < 400
            for chunk in response.iter_bytes():
                received += len(chunk)
                if to_file:
                    assert spool is not None
                    spool.write(chunk)
                    if max_bytes is not None and received > max_bytes:
                        raise OversizedAnswer(
                            f"OpenCost at {self.base_url} answered {path} with more than {max_bytes} bytes"
                        )
                else:
                    chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise _DeadlineExceeded(
                        f"overall deadline of {self.timeout:g} s exceeded: OpenCost sent {received} bytes "
                        "of its answer by then"
                    )
            return response.status_code, b"".join(chunks)

    def _get(
        self,
        path: str,
        params: dict[str, str],
        retry_until: float | None = None,
        *,
        spool: IO[bytes] | None = None,
        max_bytes: int | None = None,
    ) -> bytes:
        def attempt_once() -> tuple[bytes, None] | tuple[None, str]:
            try:
                status, body = self._fetch(path, params, spool, max_bytes)
            except _DeadlineExceeded as exc:
                return None, str(exc)
            except httpx.HTTPError as exc:
                return None, transport_problem(exc)
            if status < 400:
                return body, None
            problem = f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}"
            if status == 404:
                raise EndpointMissing(f"OpenCost at {self.base_url} does not serve {path}: {problem}")
            if status not in RETRY_STATUSES:
                raise OpenCostUnavailable(f"OpenCost at {self.base_url} rejected {path}: {problem}")
            return None, problem

        return self._retries.run(path, attempt_once, retry_until)


def _params(
    start: datetime,
    end: datetime,
    aggregate: str,
    accumulate: bool,
    include_idle: bool,
    namespaces: Sequence[str] | None = None,
    exclude_namespaces: bool = False,
) -> dict[str, str]:
    params = {
        "window": f"{_rfc3339(start)},{_rfc3339(end)}",
        "aggregate": aggregate,
        "accumulate": "true" if accumulate else "false",
        "includeIdle": "true" if include_idle else "false",
        "shareIdle": "false",
    }
    if namespaces:
        params["filter"] = namespace_filter(namespaces, exclude=exclude_namespaces)
    return params


class _DeadlineExceeded(Exception):
    """An attempt outlived the client's overall deadline (internal: becomes a retried problem)."""


def _summary_set(item: SummarySet) -> dict[str, SummaryAllocation]:
    """One summary set's records; a set whose window is null (an empty range) has none."""
    window = item.get("window")
    if window is not None and (
        ("start" in window and window["start"] is None) or ("end" in window and window["end"] is None)
    ):
        return {}
    allocations = item.get("allocations") or {}
    for record in allocations.values():
        if "efficiency" in record:  # older name: callers read totalEfficiency only
            older = record.pop("efficiency")
            if record.get("totalEfficiency") is None:
                record["totalEfficiency"] = older
    return allocations


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "body"
    return f"{where}: {error['msg']}"
