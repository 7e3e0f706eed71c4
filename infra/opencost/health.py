"""Is OpenCost reachable, and which version is it? One short ``GET /healthz`` (OpenCost's API
server answers it without touching Prometheus), for the data-quality view and ``finops doctor``,
and ``GET /metrics`` for the version (OpenCost's ``opencost_build_info`` gauge). They report, never
raise, and never name the address (an answer body may reach a browser)."""

from __future__ import annotations

import re

import httpx

HEALTH_TIMEOUT_SECONDS = 2.0
_BUILD_INFO = re.compile(r'^opencost_build_info\{[^}]*\bversion="([^"]*)"', re.MULTILINE)


def probe(base_url: str) -> tuple[bool, str | None]:
    """``(True, None)`` when ``/healthz`` answers 2xx within ``HEALTH_TIMEOUT_SECONDS``, else
    ``(False, reason)``: the HTTP status, or the kind of transport failure."""
    timeout = HEALTH_TIMEOUT_SECONDS
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout)) as client:
            response = client.get(base_url.rstrip("/") + "/healthz", headers={"User-Agent": "finops-functions"})
    except httpx.TimeoutException:
        return False, f"no answer within {timeout:g} s"
    except httpx.HTTPError as exc:
        return False, f"{type(exc).__name__}: could not reach OpenCost"
    if response.is_success:
        return True, None
    return False, f"OpenCost's /healthz answered HTTP {response.status_code}"


def build_version(base_url: str) -> str | None:
    """OpenCost's version from its ``/metrics`` (the ``version`` label of ``opencost_build_info``),
    or None when it cannot be read (no answer, no such gauge)."""
    try:
        with httpx.Client(timeout=httpx.Timeout(HEALTH_TIMEOUT_SECONDS)) as client:
            response = client.get(base_url.rstrip("/") + "/metrics", headers={"User-Agent": "finops-functions"})
    except httpx.HTTPError:
        return None
    match = _BUILD_INFO.search(response.text) if response.is_success else None
    return match[1] if match and match[1] else None
