"""We test these aspects of a function's cold start under functions-framework:

- a missing or malformed variable stops the process with a message naming the variable;
- the image's entry command serves the billing targets (readiness; pings need the token);
- a target imports its own function only, and never the heavy kubernetes client (cold start cost);
- the webhook's target builds no other function's settings: a settings class is built only when
  it is loaded;
- gunicorn's master imports psycopg and its pool once for its workers, but opens no database
  connection (each forked worker connects and checks the schema) unless it migrates
  (``MIGRATE_ON_START``).
"""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from sandbox.localstack import ROOT, Stack, functions_framework_command, serve_function


@pytest.mark.parametrize(
    ("drop", "set_", "named"),
    [("OPENCOST_URL", {}, "OPENCOST_URL is required"), (None, {"HOURS_LOOKBACK": "many"}, "HOURS_LOOKBACK")],
    ids=["missing", "malformed"],
)
def test_bad_configuration_stops_the_start_and_names_the_variable(
    stack: Stack, drop: str | None, set_: dict[str, str], named: str
) -> None:
    env = stack.function_env("collect_allocations", **set_)
    if drop:
        env.pop(drop)
    result = subprocess.run(
        functions_framework_command("collect_allocations", 0), env=env, capture_output=True, timeout=60, check=False
    )
    assert result.returncode != 0
    assert named in result.stdout.decode() + result.stderr.decode()


@pytest.mark.parametrize("target", ["collect_charges", "reconcile"])
def test_every_target_serves_readiness_and_refuses_anonymous_work(stack: Stack, target: str) -> None:
    with serve_function(stack, target) as url:
        assert httpx.get(url + "/healthz").status_code == 200
        if target == "collect_charges":
            assert httpx.post(url, json={}).status_code == 401


def test_a_target_imports_only_its_own_function_and_not_kubernetes() -> None:
    code = (
        "import functions.main as m, sys; m.on_sync;"
        "print('kubernetes' in sys.modules, 'boto3' in sys.modules, 'functions.backfill.main' in sys.modules);"
        "[getattr(m, t) for t in m.__all__]; print(sorted(t for t in m.__all__ if callable(getattr(m, t))))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    first, second = result.stdout.splitlines()
    assert first.split() == ["False", "False", "False"]
    assert second == str(
        sorted(["backfill", "collect_allocations", "collect_charges", "cost_api", "on_sync", "reconcile"])
    )


def test_the_webhook_target_builds_no_other_functions_settings() -> None:
    code = (
        "import functions.main as m, infra.settings as s; m.on_sync;"
        "built = (s.OpenCostSettings, s.BillingSettings);"
        "print([c.__name__ for c in built if c.__pydantic_complete__])"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == ["[]"]


@pytest.mark.parametrize(("migrate", "pools"), [("false", "0"), ("true", "1")])
def test_the_master_imports_psycopg_and_connects_only_to_migrate(stack: Stack, migrate: str, pools: str) -> None:
    """The webhook's cold start imports psycopg and its pool in the master (once, for its
    workers), and opens a pool there only to migrate (``MIGRATE_ON_START``, the local stack's way)."""
    code = (
        "import sys, functions_framework;"
        "functions_framework.create_app('on_sync', sys.argv[1]);"
        "from infra import clients;"
        "print(clients.database.cache_info().currsize);"
        "print('psycopg' in sys.modules, 'psycopg_pool' in sys.modules)"
    )
    env = stack.function_env("on_sync", WEBHOOK_TOKEN="token-for-the-test", MIGRATE_ON_START=migrate)
    result = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "functions" / "main.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.splitlines()[-2:] == [pools, "True True"]
