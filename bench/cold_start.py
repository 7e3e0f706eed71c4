"""Cold start of the Argo CD webhook (``on_sync``) against a hello-world function, each started
with the production functions-framework command, interleaved, median of ``COLD_STARTS`` each.

1. Served: from the ``Popen`` of the command to the first 202, posting a webhook every 10 ms
   (``on_sync``'s first answer has stored a new sync event and sent its CloudEvent).
2. Phases, in a fresh interpreter of its own per start: importing functions-framework; building
   the app (``create_app``: importing the target, validating its settings and, for ``on_sync``,
   connecting to PostgreSQL and checking the schema); the first request through the app in
   process (no gunicorn). What the served time adds to them is the interpreter's start, gunicorn's
   master and the worker it forks, and HTTP.

Our packages' bytecode is written first (``compile_product``), as the image's ``pip install``
writes it.
3. ``create_app`` by library, in one more fresh interpreter per start, under ``-X importtime``
   (which slows imports a little): the self time of the modules it imports, grouped by
   ``LIBRARIES``; the rest of ``create_app`` is ours (our modules, settings, the warm-up's
   connection and schema check).
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from sandbox.localstack import ROOT, Stack, functions_framework_command
from sandbox.processes import free_port

COLD_STARTS = 9
POLL_SECONDS = 0.010
TRIVIAL = ROOT / "bench" / "trivial" / "main.py"
PHASES = ("import functions-framework", "create_app (target, settings, warm-up)", "first request, in process")

# Run in a fresh interpreter: argv[1] target, argv[2] source, argv[3] the JSON body, argv[4] token.
_PHASES_CODE = """
import json, sys, time
t0 = time.perf_counter()
import functions_framework
t1 = time.perf_counter()
app = functions_framework.create_app(sys.argv[1], sys.argv[2])
t2 = time.perf_counter()
answer = app.test_client().post("/", data=sys.argv[3], content_type="application/json",
                                headers={"Authorization": "Bearer " + sys.argv[4]})
t3 = time.perf_counter()
print(json.dumps({"phases": [t1 - t0, t2 - t1, t3 - t2], "status": answer.status_code}))
"""

# Run under -X importtime: argv[1] target, argv[2] source. Imports after the marker are create_app's.
_IMPORTS_CODE = """
import sys, time
import functions_framework
print("finops-bench: create_app", file=sys.stderr, flush=True)
t = time.perf_counter()
functions_framework.create_app(sys.argv[1], sys.argv[2])
print(f"finops-bench: took {time.perf_counter() - t}", file=sys.stderr, flush=True)
"""
LIBRARIES = {  # top-level modules of each library that create_app imports
    "psycopg": ("psycopg", "psycopg_binary", "psycopg_pool", "typing_extensions"),  # psycopg._compat's
    "asyncio": ("asyncio",),
    "pydantic": ("pydantic", "pydantic_core", "annotated_types", "typing_inspection"),
    "pydantic-settings": ("pydantic_settings", "dotenv"),
}
OURS = ("finops", "infra", "usecases", "functions")

Body = Callable[[int], dict[str, Any]]
Hook = Callable[[str], dict[str, Any]]  # a webhook body for a revision


def polls(hook: Hook, prefix: str) -> Body:
    """Poll ``n`` of a start: a revision of its own, so the first 202 is a new event."""
    return lambda n: hook(f"{prefix}-{n}")


@dataclass(frozen=True)
class Start:
    """One function's cold starts: served seconds, seconds per phase, and ``create_app``'s
    seconds by library (``imports``), one list or mapping per start."""

    served: list[float]
    phases: list[list[float]]
    imports: list[dict[str, float]] = field(default_factory=list)

    def imports_line(self) -> str:
        if not self.imports:
            return ""
        parts = "   ".join(
            f"{name} {statistics.median(i.get(name, 0.0) for i in self.imports) * 1000:.0f}" for name in self.imports[0]
        )
        return f"\n           create_app by library (ms, -X importtime): {parts}"

    def line(self, label: str) -> str:
        runs = "(" + ", ".join(f"{s * 1000:.0f}" for s in self.served) + ")"
        parts = "   ".join(
            f"{name.split(' (')[0]} {statistics.median(p[i] for p in self.phases) * 1000:.0f}"
            for i, name in enumerate(PHASES)
        )
        return (
            f"  {label:<8} {statistics.median(self.served) * 1000:6.0f} ms {runs}\n           phases (ms): {parts}"
            + self.imports_line()
        )


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


def first_202(command: list[str], env: dict[str, str], url: str, body: Body, token: str, log_dir: Path) -> float:
    """Seconds from ``Popen`` to the first 202, posting ``body(n)`` every ``POLL_SECONDS``."""
    http = httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30)  # made before the clock starts
    with (log_dir / "cold-start.log").open("ab") as log:
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


def phases(target: str, source: Path, env: dict[str, str], body: dict[str, Any], token: str) -> list[float]:
    """Seconds of each of ``PHASES`` in a fresh interpreter."""
    command = [sys.executable, "-c", _PHASES_CODE, target, str(source), json.dumps(body), token]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    lines = [line for line in result.stdout.splitlines() if line.startswith('{"phases"')]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"{target}: phases not measured: {result.stderr.strip()[-500:]}")
    measured = json.loads(lines[-1])
    if measured["status"] != 202:
        raise RuntimeError(f"{target}: the in-process request answered {measured['status']}")
    return [float(p) for p in measured["phases"]]


def imports(target: str, source: Path, env: dict[str, str]) -> dict[str, float]:
    """Seconds of ``create_app`` by library in a fresh interpreter under ``-X importtime``: the
    self times of the modules it imports, by ``LIBRARIES``, the other libraries (the standard
    library's included) together, and the rest (``ours``: our modules, whose lazily imported
    bodies importtime does not list, and the warm-up)."""
    command = [sys.executable, "-X", "importtime", "-c", _IMPORTS_CODE, target, str(source)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    lines = result.stderr.splitlines()
    if result.returncode != 0 or "finops-bench: create_app" not in lines:
        raise RuntimeError(f"{target}: imports not measured: {result.stderr.strip()[-500:]}")
    group = {module: name for name, modules in LIBRARIES.items() for module in modules}
    seconds = dict.fromkeys([*LIBRARIES, "other libraries", "ours"], 0.0)
    total = 0.0
    for line in lines[lines.index("finops-bench: create_app") + 1 :]:
        if line.startswith("finops-bench: took "):
            total = float(line.removeprefix("finops-bench: took "))
            break
        if line.startswith("import time:") and line.count("|") == 2:
            own, _, name = line.removeprefix("import time:").split("|")
            top = name.strip().split(".")[0]
            if top not in OURS and own.strip().isdigit():
                seconds[group.get(top, "other libraries")] += int(own) / 1e6
    seconds["ours"] = max(0.0, total - sum(seconds.values()))
    return seconds


def trivial_command(port: int) -> list[str]:
    """The production functions-framework command, with the trivial function as its source."""
    command = functions_framework_command("ack", port)
    command[command.index("--source") + 1] = str(TRIVIAL)
    return command


def compile_product() -> None:
    """Write the bytecode of our packages, as the image has it: its ``pip install`` of the wheel
    compiles every module, functions-framework's as ours. A checkout run with
    ``PYTHONDONTWRITEBYTECODE`` (as the image sets it, and this machine) would otherwise compile
    our modules from source at every start, while the floor's come compiled from the venv."""
    for package in ("finops", "functions", "infra"):
        if not compileall.compile_dir(ROOT / package, quiet=1):
            raise RuntimeError(f"{package}: a module does not compile")


def measure(stack: Stack, ours_env: dict[str, str], hook: Hook, token: str) -> tuple[Start, Start]:
    """``(ours, floor)``: ``on_sync`` in ``stack`` with ``ours_env``, and the trivial function,
    both with ``ours_env``'s ``THREADS`` and ``WORKERS``."""
    compile_product()
    ours, floor = Start([], []), Start([], [])
    main_py = ROOT / "functions" / "main.py"
    for run in range(COLD_STARTS):
        port = free_port()
        env = stack.function_env("on_sync", PORT=str(port), **ours_env)
        ours.served.append(
            first_202(
                functions_framework_command("on_sync", port),
                env,
                f"http://127.0.0.1:{port}",
                polls(hook, f"cold-{run}"),
                token,
                stack.log_dir,
            )
        )
        ours.phases.append(phases("on_sync", main_py, env, hook(f"phases-{run}"), token))
        ours.imports.append(imports("on_sync", main_py, env))
        port = free_port()
        env = stack.function_env("ack", PORT=str(port), THREADS=ours_env["THREADS"], WORKERS=ours_env["WORKERS"])
        floor.served.append(
            first_202(trivial_command(port), env, f"http://127.0.0.1:{port}", polls(hook, "any"), token, stack.log_dir)
        )
        floor.phases.append(phases("ack", TRIVIAL, env, hook("any"), token))
    return ours, floor


def report(ours: Start, floor: Start) -> None:
    print(
        f"cold start: Popen of the functions-framework command to the first 202, median of {COLD_STARTS} "
        f"(interleaved); phases in a fresh interpreter each, {os.cpu_count()} cores"
    )
    print(ours.line("ours"))
    print(floor.line("floor"))
    ratio = statistics.median(ours.served) / statistics.median(floor.served)
    print(f"  ratio ours/floor: {ratio:.2f}  (target <= 2.0)")
