"""The Argo CD webhook (``on_sync``) served by functions-framework exactly as in production:
how fast it acknowledges, and how fast it starts. Each against a floor measured in the same run.

1. Acknowledgement latency under load: 100 concurrent clients (a thread with its own keep-alive
   ``httpx.Client`` each) send 10 webhooks each, one after the other, after an untimed one that
   opens the connection and warms the function, so cold start is not in the numbers. Floor and
   ours alternate, ``RUNS`` times; the figures are the medians of the runs' p50 and p99.

   - ours: ``on_sync`` against a real PostgreSQL, every webhook with a distinct revision, so
     each one takes the realistic path: authenticate, validate, store the new ``sync_events``
     row and its ``job_runs`` record (one statement), send the CloudEvent to ``K_SINK`` and
     answer 202. Also the replay path: the same webhooks again, after their events are marked
     measured (an Argo CD retry after the fact: no new row, no CloudEvent).
   - the sink (``bench/sink.py``): a broker's ingress reduced to an asyncio server answering 202,
     in its own process. A real broker runs on other nodes; here it shares the cores with the
     function, so it is kept nearly free (a heavier sink's CPU would be counted in our latency).
     It counts the events, checked against the new sync events.
   - floor: ``bench/trivial/main.py``, a function that only answers 202, served with the same
     functions-framework command, the same ``WORKERS`` and ``THREADS`` and the same client load.

   Both are served with the on-sync Service's ``WORKERS`` and ``THREADS``
   (``knative/services/on-sync.yaml``: two processes of 32 threads), then again with one worker
   process each (functions-framework's default), reported on its own lines.

   The breakdown is CPU per acknowledged webhook while the clients run (``/proc``): the client
   process, the function (gunicorn's master and worker), the sink, and the PostgreSQL server
   (all of its processes: other work on the same server is counted too).

2. Cold start: ``bench/cold_start.py`` (Popen to the first 202, and its phases).

What the 202 costs beyond the trivial one: docs/explanation/architecture.md, "Data flows"; what
make bench reports: docs/development/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import yaml

from bench import cold_start
from infra.postgres import apply_migrations, connect
from sandbox.localstack import ROOT, Stack, serve_function, wait_until_serving
from sandbox.postgres import embedded_postgres, scratch_database
from sandbox.processes import free_port

CLIENTS = 100
REQUESTS = 10  # per client, after WARMUP untimed ones
WARMUP = 1
RUNS = 5  # floor and ours alternate; medians of the runs (fewer leave the ratio noisy)
SERVICE = ROOT / "knative" / "services" / "on-sync.yaml"
TOKEN = "bench-webhook-token"
LOG_DIR = ROOT / ".local" / "bench-logs"
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

Body = Callable[[int, int], dict[str, Any]]


@dataclass(frozen=True)
class Load:
    """The client-side latencies (seconds) of one load run, its failures by cause, its wall time
    and the CPU seconds each process group spent while the clients ran."""

    latencies: list[float]
    failures: Counter[str]
    seconds: float
    cpu: dict[str, float] = field(default_factory=dict)

    def percentile(self, p: int) -> float:
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[p - 1]


@dataclass(frozen=True)
class Runs:
    """The loads of one path over ``RUNS`` runs."""

    loads: list[Load]

    def median(self, p: int) -> float:
        return statistics.median(load.percentile(p) for load in self.loads)

    def line(self, label: str) -> str:
        rate = statistics.median(len(load.latencies) / load.seconds for load in self.loads)
        failures: Counter[str] = sum((load.failures for load in self.loads), Counter())
        causes = ", ".join(f"{n} {cause}" for cause, n in failures.most_common())
        failed = f"; not 202: {causes}" if causes else ""
        runs = ", ".join(f"{load.percentile(50) * 1000:.0f}" for load in self.loads)
        return (
            f"  {label:<46} p50 {self.median(50) * 1000:6.1f} ms   p99 {self.median(99) * 1000:6.1f} ms"
            f"   ({rate:,.0f} req/s; p50s {runs}{failed})"
        )

    def cpu_line(self) -> str:
        """CPU milliseconds per acknowledged webhook, by process group (median of the runs)."""
        groups = self.loads[0].cpu
        parts = [
            f"{name} {statistics.median(load.cpu[name] / len(load.latencies) for load in self.loads) * 1000:.2f}"
            for name in groups
        ]
        return "      CPU ms per webhook: " + ", ".join(parts) if parts else ""


def serving(service: Path = SERVICE) -> dict[str, str]:
    """``WORKERS`` and ``THREADS`` as the on-sync Service sets them (functions-framework's
    defaults where it does not)."""
    manifest = next(d for d in yaml.safe_load_all(service.read_text()) if d and d.get("kind") == "Service")
    (container,) = manifest["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
    return {"WORKERS": env.get("WORKERS", "1"), "THREADS": env["THREADS"]}


def hook(revision: str) -> dict[str, Any]:
    """A valid Argo CD Notifications body for ``argocd/web`` deploying to ``shop``."""
    return {
        "app": "web",
        "appNamespace": "argocd",
        "project": "default",
        "destinationNamespace": "shop",
        "destinationServer": "https://kubernetes.default.svc",
        "destinationName": "",
        "syncResult": "Succeeded",
        "revision": revision,
        "revisions": None,
        "finishedAt": "2026-11-29T10:00:00Z",
        "resources": [{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web"}],
    }


def distinct(run: int) -> Body:
    """Request ``n`` of ``client`` in run ``run`` (negative ``n``: untimed warm-up), a revision of its own."""
    return lambda client, n: hook(f"bench-{run}-{client}-{n}")


@contextlib.contextmanager
def database_url() -> Iterator[str]:
    """The DSN of a migrated scratch database on ``DATABASE_URL``'s server, else an embedded one."""
    with contextlib.ExitStack() as stack:
        server = os.environ.get("DATABASE_URL") or stack.enter_context(embedded_postgres())
        dsn = stack.enter_context(scratch_database(server, prefix="finops_bench"))
        db = connect(dsn, max_size=1)
        try:
            apply_migrations(db)
        finally:
            db.close()
        yield dsn


def bench_stack(dsn: str) -> Stack:
    """The functions' settings for ``dsn``: no OpenCost or Kubernetes API (the 202 path uses neither)."""
    return Stack(dsn, "http://127.0.0.1:9", "http://127.0.0.1:9", ping_token=TOKEN, cluster="bench", log_dir=LOG_DIR)


@contextlib.contextmanager
def serve_sink() -> Iterator[tuple[str, int]]:
    """``bench/sink.py`` in its own process: its URL and process id."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.sink", "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().rsplit(" ", 1)[-1].strip()
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(10)


@contextlib.contextmanager
def serve_trivial(stack: Stack, serve: dict[str, str]) -> Iterator[tuple[str, int]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = stack.function_env("ack", PORT=str(port), **serve)
    with (
        (LOG_DIR / "trivial.log").open("ab") as log,
        cold_start.started(cold_start.trivial_command(port), env, log) as ff,
    ):
        wait_until_serving(url, ff)
        yield url, ff.pid


def ours_env(sink: str, serve: dict[str, str]) -> dict[str, str]:
    return {"WEBHOOK_TOKEN": TOKEN, "K_SINK": sink, **serve}


def listener_pid(url: str) -> int:
    """The functions-framework master serving ``url`` (gunicorn's master and worker both listen)."""
    port = url.rsplit(":", 1)[-1]
    out = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, check=False).stdout
    pids = [int(pid) for pid in re.findall(r"pid=(\d+)", out)]
    if not pids:
        return 0
    stats = {pid: _stat(str(pid)) for pid in pids}
    return next((pid for pid, stat in stats.items() if stat and stat[0] not in stats), min(pids))


def _stat(pid: str) -> tuple[int, float, str] | None:
    """``(parent, CPU seconds, name)`` of a process, from ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS, text[text.index("(") + 1 : text.rindex(")")]


def cpu_seconds(groups: dict[str, int]) -> dict[str, float]:
    """CPU seconds of this process, of each process tree in ``groups`` (a process and its children:
    gunicorn's master and workers) and of every PostgreSQL process."""
    if not os.path.isdir("/proc"):
        return {}
    procs = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(p)) is not None}
    out = {"client": time.process_time()}
    for name, root in groups.items():
        out[name] = sum(cpu for pid, (parent, cpu, _) in procs.items() if root in (pid, parent))
    out["postgres"] = sum(cpu for _, cpu, name in procs.values() if name == "postgres")
    return out


def drive(url: str, body: Body, groups: dict[str, int]) -> Load:
    """``CLIENTS`` threads, each warming its connection with ``WARMUP`` requests, then, all
    released at once, sending ``REQUESTS`` more one after the other."""
    latencies: list[list[float]] = [[] for _ in range(CLIENTS)]
    failures: Counter[str] = Counter()
    lock = threading.Lock()
    began: list[float] = []
    cpu_before: list[dict[str, float]] = []

    def release() -> None:
        cpu_before.append(cpu_seconds(groups))
        began.append(time.perf_counter())

    barrier = threading.Barrier(CLIENTS, action=release)

    def client(c: int) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(headers=headers, timeout=60) as http:

            def post(n: int) -> str | None:
                """None if answered 202, else the cause."""
                try:
                    status = http.post(url, json=body(c, n)).status_code
                except httpx.HTTPError as exc:
                    return type(exc).__name__
                return None if status == 202 else f"HTTP {status}"

            for n in range(WARMUP):
                if failed := post(-1 - n):
                    with lock:
                        failures[f"{failed} (warm-up)"] += 1
            barrier.wait(120)
            mine = latencies[c]
            for n in range(REQUESTS):
                start = time.perf_counter()
                failed = post(n)
                mine.append(time.perf_counter() - start)
                if failed:
                    with lock:
                        failures[failed] += 1

    threads = [threading.Thread(target=client, args=(c,), name=f"client-{c}") for c in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ended = time.perf_counter()
    after = cpu_seconds(groups)
    cpu = {name: after[name] - cpu_before[0][name] for name in after}
    return Load([x for mine in latencies for x in mine], failures, ended - began[0], cpu)


def mark_measured(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("UPDATE sync_events SET status = 'measured' WHERE status = 'pending'").rowcount


def count_events(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM sync_events").fetchone()
        return int(row[0]) if row else 0


def sent_events(sink: str) -> int:
    return int(httpx.get(f"{sink}/count").text)


@dataclass(frozen=True)
class Comparison:
    """Floor, new events and replays, each over ``RUNS`` runs, served one way (``serve``)."""

    serve: dict[str, str]
    floor: Runs
    ours: Runs
    replay: Runs
    stored: int
    sent: int
    marked: int

    def print(self) -> None:
        for label, runs in (
            ("ours  on_sync, distinct revisions (new event)", self.ours),
            (f"ours  on_sync, replays ({self.marked:,} events measured)", self.replay),
            ("floor trivial 202, same command and load", self.floor),
        ):
            print(runs.line(label))
            print(runs.cpu_line())
        print(f"  sync events stored {self.stored:,}, CloudEvents received by the sink {self.sent:,}")
        for p in (50, 99):
            print(
                f"  p{p} ratio ours/floor: distinct {self.ours.median(p) / self.floor.median(p):.2f}, "
                f"replay {self.replay.median(p) / self.floor.median(p):.2f}  (target <= 2.0)"
            )


def compare(serve: dict[str, str], sink: str, sink_pid: int) -> Comparison:
    """Floor and ours (new events, then replays) served with ``serve``, each against a fresh database."""
    floor: list[Load] = []
    ours: list[Load] = []
    replay: list[Load] = []
    with database_url() as dsn:
        stack = bench_stack(dsn)
        before = sent_events(sink)
        with (
            serve_trivial(stack, serve) as (trivial, trivial_pid),
            serve_function(stack, "on_sync", **ours_env(sink, serve)) as url,
        ):
            on_sync_pid = listener_pid(url)
            for run in range(RUNS):
                floor.append(drive(trivial, distinct(run), {"function": trivial_pid, "sink": sink_pid}))
                ours.append(drive(url, distinct(run), {"function": on_sync_pid, "sink": sink_pid}))
            stored, sent = count_events(dsn), sent_events(sink) - before
            marked = mark_measured(dsn)
            for run in range(RUNS):
                replay.append(drive(url, distinct(run), {"function": on_sync_pid, "sink": sink_pid}))
    return Comparison(serve, Runs(floor), Runs(ours), Runs(replay), stored, sent, marked)


def main() -> None:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    service = serving()
    single = {**service, "WORKERS": "1"}
    with serve_sink() as (sink, sink_pid):
        as_served = compare(service, sink, sink_pid)
        one_worker = compare(single, sink, sink_pid) if service != single else None
        with database_url() as dsn:
            stack = bench_stack(dsn)
            cold_ours, cold_floor = cold_start.measure(stack, ours_env(sink, service), hook, TOKEN)

    print(
        f"webhook: acknowledgement latency, {CLIENTS} concurrent clients x {REQUESTS} requests "
        f"(after {WARMUP} untimed each), as the on-sync Service serves it: WORKERS={service['WORKERS']} "
        f"THREADS={service['THREADS']} (floor and ours alike), {os.cpu_count()} cores, medians of {RUNS} runs"
    )
    as_served.print()
    if one_worker is not None:
        print(f"  one worker process each (WORKERS=1 THREADS={single['THREADS']}), for comparison:")
        one_worker.print()
    cold_start.report(cold_ours, cold_floor)


if __name__ == "__main__":
    main()
