"""Bounded retries with exponential backoff for the HTTP sources (OpenCost, Prometheus).

One attempt answers ``(body, None)`` on success, ``(None, problem)`` on a failure worth retrying
(a connection error, a timeout, a 5xx), or raises for one that is not (a refused request). After
``retries`` retries, or when the next wait would end past ``retry_until`` (a ``time.monotonic()``
deadline: the invocation's time budget), the source is unavailable: ``unavailable`` is raised
with the last problem, naming the source, the path and the attempts made.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from finops.errors import TemporaryError

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({500, 502, 503, 504})

Attempt = Callable[[], tuple[bytes, None] | tuple[None, str]]


def json_client(
    base_url: str, timeout: float, transport: httpx.BaseTransport | None, headers: dict[str, str] | None = None
) -> httpx.Client:
    """An httpx client of a JSON API: ``timeout`` seconds per operation, connecting within 5 s at most."""
    return httpx.Client(
        base_url=base_url,
        timeout=httpx.Timeout(timeout, connect=min(5.0, timeout)),
        transport=transport,
        headers={"Accept": "application/json", "User-Agent": "finops-functions", **(headers or {})},
    )


def transport_problem(exc: httpx.HTTPError) -> str:
    """A failure to get an answer (connect errors, timeouts, broken encodings) as a retried problem."""
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


@dataclass(frozen=True)
class RetryPolicy:
    name: str  # the source's name, e.g. "OpenCost"
    base_url: str
    retries: int
    backoff: float  # seconds before the first retry; doubled for each next one
    unavailable: type[TemporaryError]

    @property
    def source(self) -> str:
        return f"{self.name} at {self.base_url}"

    def run(self, path: str, attempt_once: Attempt, retry_until: float | None = None) -> bytes:
        attempt = 0
        while True:
            body, problem = attempt_once()
            if problem is None:
                assert body is not None
                return body
            if attempt >= self.retries:
                raise self.unavailable(f"{self.source} failed {path} after {attempt + 1} attempts: {problem}")
            delay = self.backoff * (2**attempt)
            if retry_until is not None and time.monotonic() + delay >= retry_until:
                raise self.unavailable(
                    f"{self.source} failed {path} after {attempt + 1} attempt(s), no retry within "
                    f"the invocation's time budget: {problem}"
                )
            log.warning(
                f"{self.name} request failed; retrying",
                extra={"fields": {"path": path, "attempt": attempt + 1, "delay_s": delay, "error": problem}},
            )
            time.sleep(delay)
            attempt += 1
