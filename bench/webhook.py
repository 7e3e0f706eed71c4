"""The Argo CD webhook (``on_sync``) served by functions-framework exactly as in production:
how fast it acknowledges, and how fast it starts. Each against a floor measured in the same run.

1. Acknowledgement latency under load: 100 concurrent clients (a thread with its own keep-alive
   ``httpx.Client`` each) send 10 webhooks each, one after the other, after an untimed one that
   opens the connection and warms the function, so cold start is not in the numbers.

   - ours: ``on_sync`` against a real PostgreSQL, every webhook with a distinct revision, so
     each one takes the realistic path: authenticate, validate, insert a new ``sync_events`` row,
     record the run in ``job_runs``, send the CloudEvent to ``K_SINK`` and answer 202. The sink
     is the trivial function below (a broker accepting every event at once), so no measurement
     runs in the function. Also the replay path: the same webhooks again, after their events
     are marked measured (an Argo CD retry after the fact: no new row, no CloudEvent).
   - floor: ``bench/trivial/main.py``, a function that only answers 202, served with the same
     functions-framework command, the same ``THREADS`` and the same client load.

   p50 and p99 of each request's latency as the client sees it; the ratio is of the p99s.

2. Cold start: from the ``Popen`` of the functions-framework command to the first 202, polling
   every 10 ms. For ``on_sync`` the environment is the one above, and the first answer includes
   its settings, migrations check and first database connection; the floor is the trivial
   function. Median of 3 starts each, interleaved.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import httpx
import psycopg

from functions.localstack import (
    ROOT,
    Stack,
    free_port,
    functions_framework_command,
    serve_function,
    wait_until_serving,
)
from infra.postgres import apply_migrations, connect
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.postgres import embedded_postgres, scratch_database

CLIENTS = 100
REQUESTS = 10  # per client; 20 would take a minute on the distinct path at ~35 req/s
WARMUP = 1
THREADS = "32"
COLD_STARTS = 3
POLL_SECONDS = 0.010
TOKEN = "bench-webhook-token"
TRIVIAL = ROOT / "bench" / "trivial" / "main.py"
SCENARIO = ROOT / "tests" / "data" / "scenario.yaml"
LOG_DIR = ROOT / ".local" / "bench-logs"

Body = Callable[[int, int], dict[str, Any]]


@dataclass(frozen=True)
class Load:
    """The client-side latencies (seconds) of one load run, its failures by cause and its wall time."""

    latencies: list[float]
    failures: Counter[str]
    seconds: float

    def percentile(self, p: int) -> float:
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[p - 1]

    def line(self, label: str) -> str:
        rate = len(self.latencies) / self.seconds
        causes = ", ".join(f"{n} {cause}" for cause, n in self.failures.most_common())
        failed = f"; not 202: {causes}" if causes else ""
        return (
            f"  {label:<48} p50 {self.percentile(50) * 1000:6.1f} ms   p99 {self.percentile(99) * 1000:6.1f} ms"
            f"   ({rate:,.0f} req/s{failed})"
        )


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


def distinct(client: int, n: int) -> dict[str, Any]:
    """Request ``n`` of ``client`` (negative: untimed warm-up), a revision of its own."""
    return hook(f"bench-{client}-{n}")


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


def trivial_command(port: int) -> list[str]:
    """The production functions-framework command, with the trivial function as its source."""
    command = functions_framework_command("ack", port)
    command[command.index("--source") + 1] = str(TRIVIAL)
    return command


@contextlib.contextmanager
def started(command: list[str], env: dict[str, str], log: IO[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def serve_trivial(stack: Stack) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (
        (LOG_DIR / "trivial.log").open("ab") as log,
        started(trivial_command(port), trivial_env(stack, port), log) as ff,
    ):
        wait_until_serving(url, ff)
        yield url


def trivial_env(stack: Stack, port: int) -> dict[str, str]:
    return stack.function_env("ack", PORT=str(port), THREADS=THREADS)


def on_sync_env(stack: Stack, port: int, sink: str) -> dict[str, str]:
    """The environment ``serve_function(stack, "on_sync", **ours_env(sink))`` gives its process."""
    return stack.function_env("on_sync", PORT=str(port), **ours_env(sink))


def ours_env(sink: str) -> dict[str, str]:
    return {"WEBHOOK_TOKEN": TOKEN, "THREADS": THREADS, "K_SINK": sink}


def drive(url: str, body: Body) -> Load:
    """``CLIENTS`` threads, each warming its connection with ``WARMUP`` requests, then, all
    released at once, sending ``REQUESTS`` more one after the other."""
    latencies: list[list[float]] = [[] for _ in range(CLIENTS)]
    failures: Counter[str] = Counter()
    lock = threading.Lock()
    began: list[float] = []
    barrier = threading.Barrier(CLIENTS, action=lambda: began.append(time.perf_counter()))

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
    return Load([x for mine in latencies for x in mine], failures, ended - began[0])


def cold_start(command: list[str], env: dict[str, str], url: str, body: Callable[[int], dict[str, Any]]) -> float:
    """Seconds from ``Popen`` to the first 202, posting ``body(n)`` every ``POLL_SECONDS``."""
    http = httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)  # made before the clock starts
    with (LOG_DIR / "cold-start.log").open("ab") as log:
        start = time.perf_counter()
        # The client closes before the process is stopped: an open keep-alive connection would
        # hold gunicorn's graceful shutdown for seconds.
        with started(command, env, log) as process, contextlib.closing(http):
            for n in range(10_000):
                if process.poll() is not None:
                    raise RuntimeError(f"{command[2]}: exited with {process.returncode}; see {log.name}")
                with contextlib.suppress(httpx.TransportError):
                    if http.post(url, json=body(n)).status_code == 202:
                        return time.perf_counter() - start
                time.sleep(POLL_SECONDS)
    raise RuntimeError(f"{command[2]}: no 202 after 10,000 polls")


def mark_measured(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("UPDATE sync_events SET status = 'measured' WHERE status = 'pending'").rowcount


def cold_hook(run: int) -> Callable[[int], dict[str, Any]]:
    """Poll ``n`` of cold start ``run``: a revision of its own, so the first 202 is a new event."""
    return lambda n: hook(f"cold-{run}-{n}")


def hook_any(n: int) -> dict[str, Any]:
    return hook(f"any-{n}")


def _runs(values: list[float]) -> str:
    return "(" + ", ".join(f"{v * 1000:.0f}" for v in values) + ")"


def main() -> None:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    scenario = sandbox_opencost.load_scenario(SCENARIO)
    with (
        database_url() as dsn,
        sandbox_opencost.serve(scenario) as opencost,
        sandbox_kube.serve() as kube,
    ):
        stack = Stack(dsn, opencost.url, kube.url, ping_token=TOKEN, cluster="bench", log_dir=LOG_DIR)
        with serve_trivial(stack) as sink:
            with serve_function(stack, "on_sync", **ours_env(sink)) as on_sync:
                floor = drive(sink, distinct)
                ours = drive(on_sync, distinct)
                marked = mark_measured(dsn)
                replay = drive(on_sync, distinct)
            ours_cold: list[float] = []
            floor_cold: list[float] = []
            for run in range(COLD_STARTS):
                port = free_port()
                ours_cold.append(
                    cold_start(
                        functions_framework_command("on_sync", port),
                        on_sync_env(stack, port, sink),
                        f"http://127.0.0.1:{port}",
                        cold_hook(run),
                    )
                )
                port = free_port()
                floor_cold.append(
                    cold_start(trivial_command(port), trivial_env(stack, port), f"http://127.0.0.1:{port}", hook_any)
                )

    print(
        f"webhook: acknowledgement latency, {CLIENTS} concurrent clients x {REQUESTS} requests "
        f"(after {WARMUP} untimed each), THREADS={THREADS}, {os.cpu_count()} cores"
    )
    print(ours.line("ours  on_sync, distinct revisions (new event)"))
    print(replay.line(f"ours  on_sync, replays ({marked:,} events measured)"))
    print(floor.line("floor trivial 202, same command and load"))
    print(
        f"  p99 ratio ours/floor: distinct {ours.percentile(99) / floor.percentile(99):.2f}, "
        f"replay {replay.percentile(99) / floor.percentile(99):.2f}  (target <= 1.5)"
    )
    ours_s, floor_s = statistics.median(ours_cold), statistics.median(floor_cold)
    print(f"webhook: cold start, Popen of the functions-framework command to the first 202, median of {COLD_STARTS}")
    print(f"  ours  on_sync (its first request connects to PostgreSQL)  {ours_s * 1000:6.0f} ms  {_runs(ours_cold)}")
    print(f"  floor trivial                                             {floor_s * 1000:6.0f} ms  {_runs(floor_cold)}")
    print(f"  ratio ours/floor: {ours_s / floor_s:.2f}  (target <= 1.5)")


if __name__ == "__main__":
    main()
