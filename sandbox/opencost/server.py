"""The HTTP face: a WSGI app serving OpenCost's allocation API, and a threaded server handle.

Routes: ``/allocation`` and ``/allocation/compute`` (full allocations), ``/allocation/summary`` and
``/allocation/compute/summary`` (condensed, :mod:`sandbox.opencost.summary`), ``/assets`` and
``/model/assets`` (nodes, disks, load balancers: :mod:`sandbox.opencost.assets`; not cached),
``/assets/carbon`` (each asset's CO2e when the scenario has a ``carbon`` section, else 404:
:mod:`sandbox.opencost.carbon`), ``/healthz``, ``/metrics`` (only ``opencost_build_info``, naming
``VERSION``). ``assets=False``
(``OpenCostApp``/``serve``) answers ``/assets`` with 404, as OpenCost
versions without the assets API do.

Tests arm faults on the handle (``fail_next``, ``delay_next``, ``malformed_next``, ``trickle_next``:
a stalled proxy, which defeats a per-read timeout), so the product's requests stay those it sends to
a real OpenCost. Each applies to the next ``times`` matching requests (default: any ``/allocation...``
request, summaries included; ``path="/allocation/summary"`` or ``path="/assets"`` targets only those).
``server.requests`` records the parameters of every allocation or summary query, with ``"_path"`` for
another route than ``/allocation``; ``server.calls`` pairs every query, ``/assets`` included, with its path.

``legacy_summary=True`` (``OpenCostApp``/``serve``) answers summaries the way other OpenCost versions
do (``efficiency`` for ``totalEfficiency``, ``"null"`` strings in an empty range's window; see
:mod:`sandbox.opencost.summary`).

Responses are cached in a small LRU (64 entries, 256 MiB) keyed on the normalised query with relative
windows resolved to instants (``24h`` asked twice in the same minute is one computation; an hour later it is not). Each
response carries an ``ETag``, and ``If-None-Match`` is answered with 304.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from sandbox.opencost.assets import ASSET_PATHS, assets, render_assets
from sandbox.opencost.carbon import CARBON_PATH, carbon, render_carbon
from sandbox.opencost.model import Cluster
from sandbox.opencost.query import error_body, execute, parse_query, render
from sandbox.opencost.scenario import Scenario
from sandbox.opencost.summary import render_summary
from sandbox.opencost.windows import QueryError
from sandbox.serving import QuietHandler, ThreadedServer

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

Clock = Callable[[], datetime]
ALLOCATION_PATHS = ("/allocation", "/allocation/compute")
SUMMARY_PATHS = ("/allocation/summary", "/allocation/compute/summary")
JSON = "application/json"
CACHE_ENTRIES, CACHE_BYTES = 64, 256 * 2**20
VERSION = "1.118.0-sandbox"  # the filter= language answered is v1.115's and later's
BUILD_INFO = (
    "# HELP opencost_build_info opencost_build_info Build information\n"
    "# TYPE opencost_build_info gauge\n"
    f'opencost_build_info{{revision="sandbox",version="{VERSION}"}} 1\n'
).encode()


@dataclass(slots=True)
class _Fault:
    kind: str  # "fail" | "malformed" | "delay" | "trickle"
    remaining: int
    path: str | None
    status: int = 500
    body: bytes = b""
    seconds: float = 0.0
    skip: int = 0  # matching requests let through before the fault starts
    chunk: int = 1  # trickle: bytes per write

    def applies(self, path: str) -> bool:
        return self.path is None or path == self.path or path.startswith(self.path.rstrip("/") + "/")


class OpenCostApp:
    """WSGI application for one scenario; ``clock`` (returning an aware datetime) defaults to the
    real UTC time. Thread-safe; test hooks are plain methods."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        clock: Clock | None = None,
        legacy_summary: bool = False,
        assets: bool = True,
    ) -> None:
        self.cluster = Cluster(scenario)
        self.legacy_summary = legacy_summary
        self.assets = assets
        self._clock = clock or (lambda: datetime.now(UTC))
        self._cache: OrderedDict[tuple[Any, ...], tuple[bytes, str]] = OrderedDict()
        self._cached_bytes = 0
        self._faults: deque[_Fault] = deque()
        self._lock = threading.Lock()
        self._released = threading.Event()  # set by reset(): delayed answers go at once
        self.requests: list[dict[str, str]] = []
        self.calls: list[tuple[str, dict[str, str]]] = []  # (path, parameters), same order as requests
        self.computations = 0  # how many responses were computed rather than served from cache

    # -- test hooks --------------------------------------------------------------------------------

    def fail_next(
        self,
        status: int = 500,
        times: int = 1,
        *,
        message: str = "injected failure",
        path: str | None = "/allocation",
        after: int = 0,
    ) -> None:
        """The next ``times`` matching requests answer ``status`` with OpenCost's error envelope;
        ``after`` lets that many matching requests through first (to fail a run midway)."""
        self._arm(_Fault("fail", times, path, status=status, body=error_body(status, message), skip=after))

    def delay_next(self, seconds: float, times: int = 1, *, path: str | None = "/allocation") -> None:
        """The next ``times`` matching requests are answered only after ``seconds``, or at once
        when ``reset`` comes first (so a test can hold requests for as long as it needs them held)."""
        self._arm(_Fault("delay", times, path, seconds=seconds))

    def malformed_next(
        self,
        body: bytes = b"{not json",
        times: int = 1,
        *,
        status: int = 200,
        path: str | None = "/allocation",
        after: int = 0,
    ) -> None:
        """The next ``times`` matching requests answer ``status`` with ``body`` verbatim (``after``:
        as for ``fail_next``)."""
        self._arm(_Fault("malformed", times, path, status=status, body=body, skip=after))

    def trickle_next(
        self, bytes_per_chunk: int = 1, interval: float = 0.05, times: int = 1, *, path: str | None = "/allocation"
    ) -> None:
        """The next ``times`` matching requests get their real answer ``bytes_per_chunk`` bytes at a
        time, one write every ``interval`` seconds (``Content-Length`` announces the whole body)."""
        if bytes_per_chunk < 1:
            raise ValueError("bytes_per_chunk must be >= 1")
        self._arm(_Fault("trickle", times, path, seconds=interval, chunk=bytes_per_chunk))

    def reset(self) -> None:
        """Forget armed faults, recorded requests and cached responses; answer delayed requests now."""
        with self._lock:
            self._released.set()
            self._faults.clear()
            self.requests.clear()
            self.calls.clear()
            self._cache.clear()
            self._cached_bytes = 0

    def _arm(self, fault: _Fault) -> None:
        if fault.remaining < 1:
            raise ValueError("times must be >= 1")
        with self._lock:
            self._released.clear()
            self._faults.append(fault)

    def _take_faults(self, path: str) -> tuple[float, _Fault | None]:
        """Consume at most one delay and one response fault (fail or malformed) for this request."""
        delay, response = 0.0, None
        with self._lock:
            for fault in list(self._faults):
                if not fault.applies(path):
                    continue
                if fault.skip:
                    fault.skip -= 1
                    continue
                if fault.kind == "delay" and not delay:
                    delay = fault.seconds
                elif fault.kind != "delay" and response is None:
                    response = fault
                else:
                    continue
                fault.remaining -= 1
                if fault.remaining == 0:
                    self._faults.remove(fault)
        return delay, response

    # -- WSGI --------------------------------------------------------------------------------------

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        response = self.handle(request)
        return response(environ, start_response)

    def handle(self, request: Request) -> Response:
        path = request.path.rstrip("/") or "/"
        summary = path in SUMMARY_PATHS
        params = dict(request.args.items())
        if summary or path in ALLOCATION_PATHS or path in ASSET_PATHS or path == CARBON_PATH:
            with self._lock:
                if path not in ASSET_PATHS and path != CARBON_PATH:  # ``requests``: allocation queries only
                    self.requests.append(params if path == "/allocation" else {**params, "_path": path})
                self.calls.append((path, params))
        delay, fault = self._take_faults(path)
        if delay:
            self._released.wait(delay)
        if fault is not None and fault.kind != "trickle":
            return Response(fault.body, status=fault.status, content_type=JSON)
        if request.method not in ("GET", "HEAD"):
            return _error(405, f"method {request.method} not allowed")
        if path == "/healthz":
            return Response(b"", status=200, content_type="text/plain")
        if path == "/metrics":
            return Response(BUILD_INFO, status=200, content_type="text/plain; version=0.0.4")
        try:
            if path in ASSET_PATHS and self.assets:
                found = assets(self.cluster, params, int(self._clock().timestamp()))
                return Response(render_assets(found), content_type=JSON)
            if path == CARBON_PATH and self.assets and self.cluster.scenario.carbon is not None:
                found = carbon(self.cluster, params, int(self._clock().timestamp()))
                return Response(render_carbon(found), content_type=JSON)
            if not summary and path not in ALLOCATION_PATHS:
                return _error(404, f"no such endpoint: {request.path}")
            body, etag = self.allocation(params, summary=summary)
        except QueryError as error:
            return _error(400, str(error))
        if etag in request.if_none_match:
            response = Response(status=304)
        elif fault is not None:  # trickle
            response = Response(_trickle(body, fault.chunk, fault.seconds), status=200, content_type=JSON)
            response.content_length = len(body)
        else:
            response = Response(body, status=200, content_type=JSON)
        response.set_etag(etag)
        return response

    def allocation(self, args: dict[str, str], *, summary: bool = False) -> tuple[bytes, str]:
        """The response body and ETag for an allocation (or summary) query (raises ``QueryError``)."""
        now = int(self._clock().timestamp())
        query = parse_query(args, now)
        key = (summary, *query.cache_key(self.cluster, now))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        sets = execute(self.cluster, query, now)
        body = render_summary(sets, legacy=self.legacy_summary) if summary else render(sets)
        etag = hashlib.sha256(body).hexdigest()[:32]
        with self._lock:
            self.computations += 1
            if key not in self._cache and len(body) <= CACHE_BYTES:
                self._cache[key] = (body, etag)
                self._cached_bytes += len(body)
            while len(self._cache) > CACHE_ENTRIES or self._cached_bytes > CACHE_BYTES:
                self._cached_bytes -= len(self._cache.popitem(last=False)[1][0])
        return body, etag


class FilterIgnoringApp(OpenCostApp):
    """The sandbox as OpenCost before v1.115 answers: ``filter`` silently ignored."""

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        kept = [p for p in environ.get("QUERY_STRING", "").split("&") if not p.startswith("filter=")]
        environ["QUERY_STRING"] = "&".join(kept)
        return super().__call__(environ, start_response)


def _error(status: int, message: str) -> Response:
    return Response(error_body(status, message), status=status, content_type=JSON)


def _trickle(body: bytes, size: int, interval: float) -> Iterator[bytes]:
    for offset in range(0, len(body), size):
        if offset:
            time.sleep(interval)
        yield body[offset : offset + size]


class OpenCostServer(ThreadedServer):
    """A running sandbox: ``.url``, ``.stop()``, the app's fault hooks, ``.requests`` and ``.calls``;
    also a context manager."""

    def __init__(self, app: OpenCostApp, host: str = "127.0.0.1", port: int = 0, *, log_requests: bool = False) -> None:
        handler = WSGIRequestHandler if log_requests else QuietHandler
        super().__init__(make_server(host, port, app, threaded=True, request_handler=handler), "opencost")
        self.app = app
        self.requests = app.requests  # cleared in place by reset()
        self.calls = app.calls
        self.fail_next = app.fail_next
        self.delay_next = app.delay_next
        self.malformed_next = app.malformed_next
        self.trickle_next = app.trickle_next
        self.reset = app.reset
        self.start()


def serve(
    scenario: Scenario,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    clock: Clock | None = None,
    log_requests: bool = False,
    legacy_summary: bool = False,
    assets: bool = True,
) -> OpenCostServer:
    """Start the sandbox in a daemon thread; ``port=0`` picks a free port (see ``.url``)."""
    app = OpenCostApp(scenario, clock=clock, legacy_summary=legacy_summary, assets=assets)
    return OpenCostServer(app, host, port, log_requests=log_requests)
