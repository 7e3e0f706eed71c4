"""Is OpenCost reachable? One short ``GET /healthz`` (OpenCost's API server answers it without
touching Prometheus), for the data-quality view: it reports, it never raises, and it never names
the address (an answer body may reach a browser)."""

from __future__ import annotations

import httpx

HEALTH_TIMEOUT_SECONDS = 2.0


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
