"""``python -m bench.webhook_ab [REV]``: does this checkout acknowledge webhooks faster than ``REV``
(default ``HEAD``)? The instrument for a change on the 202 path, whose effect is a few hundredths
of a ratio that moves by a tenth or more from run to run on a shared machine.

``bench.webhook`` runs the floor and ours one after the other, so a machine that slows down
between them moves the ratio. Here the floor, ``REV`` (checked out in a temporary ``git
worktree``, served with this checkout's installed libraries) and this checkout are served at
once, each ``on_sync`` on a scratch database of its own with one sink, and every run drives the
three in turn under ``bench.webhook``'s load (new events), the order rotating from run to run.
The verdict is the median of the runs' paired ratios (this checkout's p50 over ``REV``'s in the
same run), printed with every run and the CPU each spent per webhook (client, function, sink and
PostgreSQL together).
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench import webhook
from sandbox.localstack import ROOT, serve_function

RUNS = 6  # a multiple of the three orders


@contextlib.contextmanager
def checkout(rev: str) -> Iterator[Path]:
    """``rev`` checked out in a temporary worktree, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="finops-ab-") as parent:
        path = Path(parent) / "rev"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path), rev], check=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False)


def main(rev: str = "HEAD") -> None:
    webhook.LOG_DIR.mkdir(parents=True, exist_ok=True)
    serve = webhook.serving()
    p50: dict[str, list[float]] = {"floor": [], rev: [], "this": []}
    cpu: dict[str, list[float]] = {name: [] for name in p50}
    with (
        checkout(rev) as other,
        webhook.serve_sink() as (sink, sink_pid),
        webhook.database_url() as dsn_rev,
        webhook.database_url() as dsn_this,
    ):
        env = webhook.ours_env(sink, serve)
        rev_stack = webhook.bench_stack(dsn_rev)  # the floor touches no database: it shares REV's
        with (
            webhook.serve_trivial(rev_stack, serve) as (floor, floor_pid),
            serve_function(rev_stack, "on_sync", other, **env) as at_rev,
            serve_function(webhook.bench_stack(dsn_this), "on_sync", **env) as here,
        ):
            urls = {"floor": floor, rev: at_rev, "this": here}
            pids = {"floor": floor_pid, rev: webhook.listener_pid(at_rev), "this": webhook.listener_pid(here)}
            names = list(urls)
            for run in range(RUNS):
                for name in names[run % 3 :] + names[: run % 3]:
                    load = webhook.drive(urls[name], webhook.distinct(run), {"function": pids[name], "sink": sink_pid})
                    p50[name].append(load.percentile(50))
                    cpu[name].append(sum(load.cpu.values()) / len(load.latencies))
                print(
                    f"  run {run + 1}: p50 "
                    + ", ".join(f"{name} {p50[name][-1] * 1000:.0f} ms" for name in names)
                    + f"; this / {rev} {p50['this'][-1] / p50[rev][-1]:.2f}",
                    flush=True,
                )
    paired = statistics.median(this / then for this, then in zip(p50["this"], p50[rev], strict=True))
    floor_p50 = statistics.median(p50["floor"])
    print(
        f"webhook A/B, {webhook.CLIENTS} clients x {webhook.REQUESTS} requests, {RUNS} rotating runs: "
        f"this / {rev} {paired:.3f} (median of the paired runs); p50 over the floor: "
        + ", ".join(f"{name} {statistics.median(p50[name]) / floor_p50:.2f}" for name in (rev, "this"))
    )
    print(
        "  CPU ms per webhook, all processes: "
        + ", ".join(f"{name} {statistics.median(cpu[name]) * 1000:.2f}" for name in names)
    )


if __name__ == "__main__":
    main(*sys.argv[1:2])
