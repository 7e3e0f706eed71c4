"""Debian's ``prometheus`` server over a TSDB built from a generated world.

``promtool tsdb create-blocks-from openmetrics`` turns the world's OpenMetrics text into blocks;
``prometheus`` then serves them on a loopback port with a configuration that scrapes nothing.

Two flags make a TSDB built from files behave like one filled by scraping:

* ``--storage.tsdb.retention.time`` far beyond the data: blocks outside retention are deleted at
  start-up (the data lies in the past);
* ``--query.lookback-delta=30s``: a scraped series that disappears gets a staleness marker, so
  an instant query stops seeing it at once; blocks written by promtool have no markers, and with
  the default 5 minutes a pod that stopped would still be seen for 5 minutes. With one sample a
  minute, on the minute, 30 s sees exactly the sample of each minute.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from sandbox.processes import dies_with_parent, free_port, stop_process
from sandbox.prometheus.openmetrics import render
from sandbox.prometheus.world import World

INSTALL = (
    "install Debian's prometheus package (prometheus and promtool): `make test` does it as root, "
    "or run `sudo apt-get install --no-install-recommends prometheus`"
)


class PrometheusMissing(RuntimeError):
    """The prometheus or promtool binary is not installed."""


def binaries() -> tuple[str, str]:
    """``(prometheus, promtool)``, or ``PrometheusMissing`` saying how to install them."""
    found = []
    for name in ("prometheus", "promtool"):
        path = shutil.which(name) or next((p for p in (f"/usr/bin/{name}",) if os.access(p, os.X_OK)), None)
        if path is None:
            raise PrometheusMissing(f"{name} is not installed: {INSTALL}")
        found.append(path)
    return found[0], found[1]


def build_tsdb(world: World, folder: Path) -> Path:
    """Write the world's series to ``folder/series.om`` and its blocks to ``folder/data``."""
    _, promtool = binaries()
    folder.mkdir(parents=True, exist_ok=True)
    source, data = folder / "series.om", folder / "data"
    shutil.rmtree(data, ignore_errors=True)
    source.write_text(render(world))
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"promtool failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-500:]}")
    return data


@contextlib.contextmanager
def serve(world: World, folder: Path | None = None) -> Iterator[str]:
    """Build the world's TSDB and serve it; yields Prometheus's URL, stops it on exit."""
    prometheus, _ = binaries()
    owned = folder is None
    root = Path(tempfile.mkdtemp(prefix="finops-prometheus-")) if folder is None else folder
    try:
        data = build_tsdb(world, root)
        config = root / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with (root / "prometheus.log").open("wb") as log:
            process = subprocess.Popen(
                [
                    prometheus,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={data}",
                    "--storage.tsdb.retention.time=36500d",
                    "--query.lookback-delta=30s",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=dies_with_parent(),  # a killed finops run or test session leaves none serving
            )
        try:
            _wait_ready(url, process, root / "prometheus.log")
            yield url
        finally:
            stop_process(process)
    finally:
        if owned:
            shutil.rmtree(root, ignore_errors=True)


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited with {process.returncode}: {log.read_text()[-800:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/-/ready", timeout=1.0).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"prometheus at {url} is not ready after {timeout:.0f} s; see {log}")
