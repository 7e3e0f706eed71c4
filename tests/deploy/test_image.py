"""We test these aspects of the image (Containerfile) without building it (no container engine
here; ``make image`` builds it where podman or docker runs):

- it is multi-stage on python:3.11-slim; the final stage runs as a numeric non-root user, installs
  nothing and copies the virtualenv built in the first stage; THREADS and
  CLOUD_RUN_TIMEOUT_SECONDS have explicit defaults;
- the image's exact entry command, with the environment each Knative Service declares (its env,
  ConfigMaps and Secret keys; PORT as Knative sets it), starts every target and answers
  ``GET /healthz`` with 2xx; ``finops serve``/the local stack run the same source file;
- ``make image`` says clearly when neither podman nor docker is installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from functions.localstack import free_port, functions_framework_command, wait_until_serving
from functions.targets import TARGETS
from tests.deploy import manifests
from tests.deploy.manifests import ROOT

CONTAINERFILE = ROOT / "Containerfile"
BIN = Path(sys.executable).parent


def stages() -> list[list[tuple[str, str]]]:
    """The Containerfile's stages, each a list of (instruction, arguments), continuations joined."""
    text = re.sub(r"\\\n", " ", CONTAINERFILE.read_text())
    args: dict[str, str] = {}
    result: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "ARG" and not result:
            name, _, default = rest.partition("=")
            args[name] = default
            continue
        if instruction == "FROM":
            result.append([])
            rest = re.sub(r"\$\{(\w+)\}", lambda m: args[m[1]], rest)
        result[-1].append((instruction, rest.strip()))
    return result


def final_stage() -> list[tuple[str, str]]:
    return stages()[-1]


def entrypoint() -> list[str]:
    (command,) = [json.loads(rest) for instruction, rest in final_stage() if instruction == "ENTRYPOINT"]
    assert isinstance(command, list)
    return [str(part) for part in command]


def test_multi_stage_slim_non_root_without_build_tools() -> None:
    build, final = stages()
    assert build[0] == ("FROM", "python:3.11-slim AS build")
    assert final[0] == ("FROM", "python:3.11-slim")
    instructions = dict(final)
    assert re.fullmatch(r"[1-9]\d{3,}:[1-9]\d{3,}", instructions["USER"]), "a numeric non-root user (runAsNonRoot)"
    assert "COPY --from=build /opt/venv /opt/venv" in [f"COPY {rest}" for i, rest in final if i == "COPY"]
    runs = " ".join(rest for instruction, rest in final if instruction == "RUN")
    assert not re.search(r"\b(pip|apt-get|apt|gcc|build-essential)\b", runs), runs
    assert "pip wheel" in " ".join(rest for instruction, rest in build if instruction == "RUN")
    assert "CMD" not in instructions


def test_entry_command_and_its_defaults() -> None:
    assert entrypoint() == ["functions-framework", "--source", "/app/functions/main.py"]
    env = " ".join(rest for instruction, rest in final_stage() if instruction == "ENV")
    assert re.search(r"\bTHREADS=\d+", env)
    assert re.search(r"\bCLOUD_RUN_TIMEOUT_SECONDS=300\b", env), "Knative's default revision timeout"
    assert re.search(r"\bPATH=/opt/venv/bin:", env)
    # The local stack and `finops serve` run the same source file.
    local = functions_framework_command("on_sync", 8080)
    assert local[local.index("--source") + 1] == str(ROOT / "functions" / "main.py")


def local_command() -> list[str]:
    """The image's entry command on this machine: the venv's binary, /app is the repository."""
    command = entrypoint()
    return [str(BIN / command[0]), *(part.replace("/app/", f"{ROOT}/") for part in command[1:])]


def test_every_target_starts_with_the_manifest_environment_and_answers_healthz(
    database_url: str, tmp_path: Path
) -> None:
    secrets = {"DATABASE_URL": database_url, "PING_TOKEN": "p", "WEBHOOK_TOKEN": "w", "PROXY_TOKEN": "x"}
    processes: dict[str, tuple[str, subprocess.Popen[bytes], Path]] = {}
    try:
        for target, service in manifests.services_by_target().items():
            port = free_port()
            env = manifests.resolved_env(manifests.service_container(service), secrets)
            env.update(PORT=str(port), PATH=f"{BIN}:/usr/bin:/bin")  # nothing else from this process
            log = tmp_path / f"{target}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(local_command(), env=env, stdout=out, stderr=subprocess.STDOUT)
            processes[target] = (f"http://127.0.0.1:{port}", process, log)
        assert set(processes) == set(TARGETS)
        for target, (url, process, log) in processes.items():
            try:
                wait_until_serving(url, process, timeout=60)
            except RuntimeError as exc:
                pytest.fail(f"{target}: {exc}\n{log.read_text()}")
            response = httpx.get(url + "/healthz", timeout=10)
            assert 200 <= response.status_code < 300, f"{target}: {response.status_code} {log.read_text()}"
    finally:
        for _, process, _ in processes.values():
            process.terminate()
        for _, process, _ in processes.values():
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def test_make_image_says_when_no_container_engine_is_installed(tmp_path: Path) -> None:
    make = shutil.which("make")
    assert make is not None, "make runs this very suite"
    result = subprocess.run(
        [make, "-s", "image"], cwd=ROOT, env={"PATH": str(tmp_path)}, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "neither podman nor docker is installed" in result.stderr
