"""We test these aspects of the ``finops`` command's failures (run as its own process):

- every failure is one ``finops: ...`` line on stderr without a traceback: exit 2 for bad usage,
  input, configuration or policy, 3 when a dependency is down (the rule of ``cli.exits``);
- ``finops invoke`` says PING_TOKEN is unset before sending anything, and a function that is
  down is a one-line connection error;
- reports and exports validate ``--policy`` before they need ``DATABASE_URL``;
- a database that refuses connections is named with its cause, not its address;
- ``finops policy check`` validates a policy without a database (exit 0 ``policy OK``, or 2
  naming the file and the key path, or the line and column of a YAML syntax error).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.cli_runner import one_line_error, run_finops
from tests.net import refused_port

DEMO_POLICY = Path(__file__).resolve().parents[2] / "sandbox" / "demo" / "policy.yaml"
BAD_FIXED = 'currency: EUR\nshared:\n  fixed:\n    - {name: fee, amount: "-3"}\n'


@pytest.fixture
def bad_policy(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_FIXED)
    return path


def test_invoke_without_ping_token_sends_nothing() -> None:
    with refused_port() as port:
        outcome = run_finops("invoke", "collect_allocations", "--url", f"http://127.0.0.1:{port}")
    assert outcome.returncode == 2
    assert "PING_TOKEN is not set" in one_line_error(outcome)
    assert outcome.stdout == ""


def test_invoke_of_a_function_that_is_down() -> None:
    with refused_port() as port:
        outcome = run_finops("invoke", "collect_allocations", "--url", f"http://127.0.0.1:{port}", PING_TOKEN="t0k")
    assert outcome.returncode == 3
    line = one_line_error(outcome)
    assert "ConnectError" in line and f"127.0.0.1:{port}" in line


def test_invoke_with_bad_data_is_usage() -> None:
    outcome = run_finops("invoke", "collect_allocations", "--url", "http://127.0.0.1:9", "--data", "{", PING_TOKEN="t")
    assert outcome.returncode == 2
    assert "--data is not valid JSON" in one_line_error(outcome)


@pytest.mark.parametrize(
    "command",
    [
        ("report", "chargeback", "--month", "2026-10"),
        ("report", "team", "--team", "web", "--month", "2026-10"),
        ("export", "focus", "--month", "2026-10", "--to", "out.csv"),
        ("export", "chargeback-csv", "--month", "2026-10", "--to", "out.csv"),
    ],
    ids=["report-chargeback", "report-team", "export-focus", "export-chargeback-csv"],
)
def test_reports_check_the_policy_before_the_database(command: tuple[str, ...], bad_policy: Path) -> None:
    outcome = run_finops(*command, "--policy", str(bad_policy), cwd=bad_policy.parent)
    assert outcome.returncode == 2
    line = one_line_error(outcome)
    assert f"policy file {bad_policy}: policy.shared.fixed[0].amount" in line
    assert "DATABASE_URL" not in line
    assert not (bad_policy.parent / "out.csv").exists()


def test_a_good_policy_then_asks_for_the_database() -> None:
    outcome = run_finops("report", "chargeback", "--month", "2026-10", "--policy", str(DEMO_POLICY))
    assert outcome.returncode == 2
    assert "DATABASE_URL is not set" in one_line_error(outcome)


@pytest.mark.parametrize("command", [("runs",), ("verify",), ("migrate",), ("report", "daily")])
def test_a_refused_database_is_one_line_with_its_cause(command: tuple[str, ...]) -> None:
    with refused_port() as port:
        outcome = run_finops(
            *command, DATABASE_URL=f"postgresql://finops@127.0.0.1:{port}/finops", DATABASE_CONNECT_TIMEOUT_SECONDS="1"
        )
    assert outcome.returncode == 3
    line = one_line_error(outcome)
    assert line == "finops: PostgreSQL is unavailable: Connection refused"


def test_usage_errors_exit_2() -> None:
    assert run_finops("no-such-command").returncode == 2
    assert run_finops("report", "chargeback").returncode == 2


def test_policy_check_ok() -> None:
    outcome = run_finops("policy", "check", str(DEMO_POLICY))
    assert outcome.returncode == 0, outcome.stderr
    assert outcome.stdout.startswith(f"policy OK: {DEMO_POLICY} (currency USD")
    assert outcome.stderr == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (BAD_FIXED, 'policy.shared.fixed[0].amount: "-3" is negative'),
        ("currency: EUR\nidle: sideways\n", "policy.idle:"),
        ("currency: EUR\nshared: {split: even, extra: 1}\n", "policy.shared.extra: unknown key"),
        ("owner_label: team\n", "policy.currency: required"),
        ("currency: [EUR\n", ", line 2, column 1: not valid YAML: while parsing a flow sequence"),
        ("- a list\n", "expected a mapping of policy keys"),
    ],
    ids=["negative-amount", "bad-idle", "unknown-key", "no-currency", "not-yaml", "not-a-mapping"],
)
def test_policy_check_names_the_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    outcome = run_finops("policy", "check", str(path))
    assert outcome.returncode == 2
    line = one_line_error(outcome)
    assert line.startswith(f"finops: policy file {path}")
    assert expected in line
    assert outcome.stdout == ""


def test_policy_check_of_a_missing_file(tmp_path: Path) -> None:
    outcome = run_finops("policy", "check", str(tmp_path / "nope.yaml"))
    assert outcome.returncode == 2
    assert one_line_error(outcome) == f"finops: policy file {tmp_path / 'nope.yaml'}: No such file or directory"
