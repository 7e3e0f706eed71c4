"""Runs one ``collect_allocations`` run in this process, and optionally kills it with SIGKILL.

``python -m tests.e2e.collect_driver --cluster C --scheduled T [--kill-at N] [--count]
[--fleet-bucket URL --fleet-endpoint URL]``, with
``DATABASE_URL``, ``OPENCOST_URL`` and ``KUBE_API_URL`` in the environment. Every database
statement the run makes is counted; with ``--kill-at N`` the process sends itself SIGKILL just
before the Nth (mid-transaction for most points, exactly as a pod killed by the kubelet's OOM
killer or a node loss), so the tests can stop a real run at any point. ``--count`` prints how many
statements a whole run makes.

``python -m tests.e2e.collect_driver --serve`` imports all this once, then runs each request
(one JSON line on stdin: ``argv``, ``env``, ``timeout``) in a process forked for it, answering one
JSON line (``returncode``, ``stdout``, ``stderr``, or ``timeout``). The forked process is a
process of its own, as the one started per run was: its own connections to PostgreSQL and the
sandbox, killed by its own SIGKILL (``returncode`` -9); only the 1 to 3 s of imports and start-up
of a new interpreter are paid once per series instead of once per run. ``run_driver`` is the
tests' side, with ``subprocess.run``'s answer.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from finops.hours import parse_timestamp
from infra.kube import KubeClient
from infra.opencost import OpenCostClient
from infra.postgres import Database, connect
from usecases.collect_allocations.service import CollectOptions, FleetBucket, collect


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--scheduled", required=True)
    parser.add_argument("--lookback", type=int, default=6)
    parser.add_argument("--kill-at", type=int, default=0)
    parser.add_argument("--count", action="store_true")
    parser.add_argument("--fleet-bucket", default=None)
    parser.add_argument("--fleet-endpoint", default=None)
    parser.add_argument("--fleet-timeout", type=float, default=30.0)
    args = parser.parse_args(argv)

    statements = 0

    def counted(method: Any) -> Any:
        def wrapper(*a: Any, **kw: Any) -> Any:
            nonlocal statements
            statements += 1
            if statements == args.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return method(*a, **kw)

        return wrapper

    for name in ("execute", "fetch_one", "fetch_all", "fetch_csv", "copy_rows"):
        setattr(Database, name, counted(getattr(Database, name)))
    db = connect(os.environ["DATABASE_URL"])
    options = CollectOptions(
        cluster=args.cluster,
        aggregation="namespace,controllerKind,controller,pod,container",
        hours_lookback=args.lookback,
        owner_label="team",
        cost_center_label="cost-center",
        fleet=None
        if args.fleet_bucket is None
        else FleetBucket(args.fleet_bucket, args.fleet_endpoint, args.fleet_timeout),
    )
    collect(
        db,
        OpenCostClient(os.environ["OPENCOST_URL"], retries=0),
        KubeClient.from_url(os.environ["KUBE_API_URL"]),
        options,
        scheduled=parse_timestamp(args.scheduled, field="scheduled"),
        now=datetime.now(UTC),
        run_id=str(uuid.uuid4()),
    )
    db.close()
    if args.count:
        print(statements)
    return 0


def _child(request: dict[str, Any], out: int, err: int, answers: int) -> None:
    """In the forked process: the request's environment, stdout and stderr, then ``main``; never returns."""
    code = 1
    try:
        os.close(answers)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.environ.clear()
        os.environ.update(request["env"])
        try:
            code = main(request["argv"])
        except SystemExit as exc:  # argparse's refusals, as the interpreter would exit
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> int | None:
    """The wait status of ``pid`` once it ends, or ``None`` (after killing it) past ``timeout``."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+: poll
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
            time.sleep(0.01)
    else:
        try:
            ready, _, _ = select.select([pidfd], [], [], timeout)
        finally:
            os.close(pidfd)
        if ready:
            return os.waitpid(pid, 0)[1]
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def _run_forked(request: dict[str, Any], answers: int) -> dict[str, Any]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, out.fileno(), err.fileno(), answers)
        status = _wait(pid, request["timeout"])
        out.seek(0)
        err.seek(0)
        return {
            "returncode": None if status is None else os.waitstatus_to_exitcode(status),
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace"),
            "timeout": status is None,
        }


def serve() -> int:
    """One forked run per JSON line of stdin, one JSON line of answer each, until stdin ends."""
    # What a run imports when it first needs it: the Kubernetes client (KubeClient.from_url), boto3
    # for the fleet's uploads (both pure Python). Not pyarrow, whose import starts threads (a fork
    # copies only the forking one): each fleet run imports it.
    import boto3  # noqa: F401
    import botocore.exceptions  # type: ignore[import-untyped]  # noqa: F401
    import kubernetes.client.exceptions  # noqa: F401

    answers = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        answers.write(json.dumps(_run_forked(json.loads(line), answers.fileno())) + "\n")
        answers.flush()
    return 0


ROOT = Path(__file__).resolve().parents[2]


class _Server:
    """The tests' side of ``--serve``: one server per test process, started at its first run."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[str] | None = None
        atexit.register(self.close)

    def run(self, argv: list[str], env: Mapping[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "tests.e2e.collect_driver", "--serve"],
                    cwd=ROOT,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write(json.dumps({"argv": argv, "env": dict(env), "timeout": timeout}) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the collect driver server ended (exit status {self.process.poll()})")
        answer = json.loads(line)
        args = [sys.executable, "-m", "tests.e2e.collect_driver", *argv]
        if answer["timeout"]:
            raise subprocess.TimeoutExpired(args, timeout, answer["stdout"], answer["stderr"])
        return subprocess.CompletedProcess(args, answer["returncode"], answer["stdout"], answer["stderr"])

    def close(self) -> None:
        with self.lock:
            if self.process is not None:
                try:
                    self.process.communicate(timeout=30)  # stdin closed: the server ends
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
                self.process = None


_SERVER = _Server()


def run_driver(
    env: Mapping[str, str], *args: str, timeout: float = 120, **flags: Any
) -> subprocess.CompletedProcess[str]:
    """One run of this driver in a process of its own (forked by ``--serve``), as ``subprocess.run``
    of ``python -m tests.e2e.collect_driver`` answers it: ``flags`` are options
    (``kill_at=3`` is ``--kill-at 3``, ``True`` a bare flag)."""
    argv = list(args)
    for flag, value in flags.items():
        argv += [f"--{flag.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return _SERVER.run(argv, env, timeout)


if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1:] == ["--serve"] else main())
