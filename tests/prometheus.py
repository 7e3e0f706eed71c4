"""A real Prometheus (Debian's ``prometheus`` and ``promtool``) over a generated world's TSDB, for
the Prometheus-source tests: ``make test`` installs the package when it is missing (as root, with
apt-get). Never skipped: without the binaries the test fails, saying how to install them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from sandbox.prometheus import PrometheusMissing, World, binaries, serve


def require_binaries() -> None:
    """Fail the test (not skip it) with the install instruction when a binary is missing."""
    try:
        binaries()
    except PrometheusMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@contextlib.contextmanager
def real_prometheus(world: World) -> Iterator[str]:
    """Prometheus serving ``world``'s series on a loopback port; yields its URL."""
    require_binaries()
    with serve(world) as url:
        yield url
