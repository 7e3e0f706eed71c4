"""We test the ``finops`` command as a new user meets it, typing wrong things:

- every option of every subcommand (found by walking ``build_parser()``, so a new option is walked
  too) refuses each value of a small table of bad values for its type with exit 2 and one stderr
  line naming the option, never an internal error or a traceback, on a migrated database and on
  an empty one; an option without a validating type (or choices) fails the walk;
- the same through the installed ``finops``, echoing the value as typed;
- every database command on an unmigrated database says to run ``finops migrate`` (exit 2);
- a well-formed ``--cluster`` the database does not know is refused, listing the known ones;
- a policy's YAML syntax error is one line with the line and column; its every invalid key is a
  line, the same from ``policy check`` and from a report (exit 2);
- every report prints as a table, JSON or CSV; ``report chargeback`` defaults to the last month.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cli import arguments
from cli.main import build_parser, main
from finops.allocations import DEFAULT_AGGREGATION
from sandbox.postgres import scratch_database
from tests.e2e.cli_runner import one_line_error, run_finops

DEMO_POLICY = str(Path(__file__).resolve().parents[2] / "sandbox" / "demo" / "policy.yaml")
HUGE = "9" * 40
# Bad values per argument type (keyed by the type function's name); each must be refused.
BAD: dict[str, tuple[str, ...]] = {
    "count": ("-5", "0", HUGE, "", "ten", "1.5", "٣٣٣٣٣٣٣"),
    "seconds": ("-1", "nan", "inf", "", "soon", "1e999"),
    "port": ("0", "-1", "65536", HUGE, "", "http"),
    "moment": ("2026-13-01", "2026-02-30", "", "yesterday", "2026-10-01T06:00:00", "10000-01-01"),
    "month": ("2026-13", "2026-00", "", "26-10", "October", "2026-1O", "next"),
    "cluster": ("Bad_Cluster!", "", "a" * 64, "prod eu", "prödeu", "-prod"),
    "label_value": ("", "web team", "-web", "a" * 64, "wéb"),
    "http_url": ("", "not a url", "ftp://example.com", "http://", "http://[::1"),
    "text": ("", "   ", "two\nlines"),
}
# A good value per type, for the options a command requires besides the one walked.
GOOD = {
    "count": "5",
    "seconds": "5",
    "port": "8080",
    "moment": "2026-10-01",
    "month": "2026-10",
    "cluster": "prod",
    "label_value": "web",
    "http_url": "http://127.0.0.1:9",
    "text": DEMO_POLICY,
}


def _type_name(action: argparse.Action) -> str:
    return getattr(action.type, "__name__", "")


def _good(action: argparse.Action) -> str:
    return str(action.choices[0]) if action.choices else GOOD[_type_name(action)]  # type: ignore[index]


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf subcommand: its words and its parser."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for sub in subs:
        for name, child in sub.choices.items():
            yield from commands(child, (*path, name))


def walk() -> list[tuple[list[str], str, str]]:
    """(argv, option, bad value) for every option taking a value, of every subcommand."""
    cases = []
    for path, parser in commands(build_parser()):
        if path == ("run",):  # handed whole to the demo's own parser (sandbox.run)
            continue
        positional = [_good(a) for a in parser._actions if not a.option_strings and a.nargs != 0]
        takes_value = [a for a in parser._actions if a.option_strings and a.nargs != 0 and a.dest != "help"]
        for action in takes_value:
            assert action.choices or _type_name(action) in BAD, f"{' '.join(path)} {action.option_strings[0]}: no type"
            required = [
                word
                for other in takes_value
                if other.required and other is not action
                for word in (other.option_strings[0], _good(other))
            ]
            values = ("no-such-choice", "") if action.choices else BAD[_type_name(action)]
            option = action.option_strings[0]
            cases += [([*path, *required, *positional, option, value], option, value) for value in values]
    return cases


@pytest.fixture(scope="module")
def empty_database_url(pg_server: str) -> Iterator[str]:
    with scratch_database(pg_server, prefix="finops_empty") as dsn:
        yield dsn


@pytest.fixture(params=["migrated", "empty"])
def any_database(request: pytest.FixtureRequest, database_url: str, empty_database_url: str) -> str:
    return database_url if request.param == "migrated" else empty_database_url


def test_every_option_refuses_bad_values(
    any_database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", any_database)
    cases = walk()
    assert len(cases) > 150  # the walk found the commands
    for argv, option, _ in cases:
        with pytest.raises(SystemExit) as exited:
            main(argv)
        err = capsys.readouterr().err
        lines = err.splitlines()
        assert exited.value.code == 2, (argv, err)
        assert len(lines) == 1 and lines[0].startswith("finops: "), (argv, err)
        assert f"argument {option}" in lines[0], (argv, err)
        assert "internal error" not in err and "Traceback" not in err, (argv, err)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("runs", "--limit", "-5"), "finops: runs: argument --limit: '-5' is not from 1 to 10000"),
        (("report", "daily", "--days", "-1"), "argument --days: '-1' is not from 1 to 3660"),
        (("collect", "--from", "2026-13-01", "--to", "2026-11-01"), "argument --from: '2026-13-01' is not a date"),
        (("report", "unlabelled", "--cluster", "Bad_Cluster!"), "argument --cluster: 'Bad_Cluster!' is not a cluster"),
        (("report", "chargeback", "--policy", DEMO_POLICY, "--month", "2026-13"), "argument --month: '2026-13'"),
        (("invoke", "on_sync", "--url", "http://u:hunter2@[::1"), "argument --url: 'http://***@[::1'"),
    ],
    ids=["limit", "days", "from", "cluster", "month", "url-redacted"],
)
def test_the_installed_command_echoes_the_value_typed(database_url: str, args: tuple[str, ...], said: str) -> None:
    outcome = run_finops(*args, DATABASE_URL=database_url)
    assert outcome.returncode == 2
    line = one_line_error(outcome)
    assert said in line and "hunter2" not in line
    assert line.endswith("--help)")


def test_collect_from_after_to_names_both(database_url: str) -> None:
    outcome = run_finops("collect", "--from", "2026-11-02", "--to", "2026-11-01", DATABASE_URL=database_url)
    assert outcome.returncode == 2
    assert one_line_error(outcome) == "finops: --from 2026-11-02T00:00:00Z is not before --to 2026-11-01T00:00:00Z"


NO_SCHEMA = "finops: the database has no schema: run `finops migrate`"


@pytest.mark.parametrize(
    "args",
    [
        ("runs",),
        ("verify",),
        ("report", "daily"),
        ("report", "unlabelled"),
        ("report", "chargeback", "--policy", DEMO_POLICY),
        ("report", "budgets", "--policy", DEMO_POLICY),
        ("export", "focus", "--month", "2026-10", "--policy", DEMO_POLICY, "--to", "out.csv"),
        ("import", "cloud", "--from", "bill.csv"),
        ("collect", "--from", "2026-10-01", "--to", "2026-10-02"),
    ],
    ids=lambda args: "-".join(a for a in args if not a.startswith(("-", "/")))[:30],
)
def test_an_unmigrated_database_says_to_migrate(empty_database_url: str, tmp_path: Path, args: tuple[str, ...]) -> None:
    outcome = run_finops(*args, cwd=tmp_path, DATABASE_URL=empty_database_url, OPENCOST_URL="http://127.0.0.1:9")
    assert outcome.returncode == 2, outcome.stderr
    assert one_line_error(outcome).startswith(NO_SCHEMA)
    assert list(tmp_path.iterdir()) == []


def _ledger_hour(database_url: str, cluster: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, reason)"
            " VALUES (%s, %s, '2026-10-01T00:00Z', 'lost', 0, 'a test hour')",
            (cluster, DEFAULT_AGGREGATION),
        )


@pytest.mark.parametrize(
    "args",
    [
        ("verify",),
        ("report", "daily"),
        ("report", "chargeback", "--policy", DEMO_POLICY, "--month", "2026-10"),
        ("export", "chargeback-csv", "--month", "2026-10", "--policy", DEMO_POLICY, "--to", "out.csv"),
    ],
    ids=["verify", "daily", "chargeback", "export"],
)
def test_an_unknown_cluster_is_refused_listing_the_known(
    db: object, database_url: str, tmp_path: Path, args: tuple[str, ...]
) -> None:
    _ledger_hour(database_url, "prod-eu")
    outcome = run_finops(*args, "--cluster", "prod-ue", cwd=tmp_path, DATABASE_URL=database_url)
    assert outcome.returncode == 2
    line = one_line_error(outcome)
    assert line.startswith("finops: --cluster 'prod-ue' is not a cluster of this database; known clusters: ")
    assert "prod-eu" in line
    assert list(tmp_path.iterdir()) == []
    known = run_finops(*args, "--cluster", "prod-eu", cwd=tmp_path, DATABASE_URL=database_url)
    assert "is not a cluster" not in known.stderr


THREE_ERRORS = 'currency: eur\nidle: sideways\nshared:\n  fixed:\n    - {name: fee, amount: "-3"}\n'


def test_every_policy_error_is_a_line_and_the_same_exit_everywhere(database_url: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(THREE_ERRORS)
    expected = [
        f'finops: policy file {path}: policy.currency: "eur" is not a currency code (e.g. EUR)',
        f'finops: policy file {path}: policy.idle: "sideways" is not one of separate, distribute',
        f'finops: policy file {path}: policy.shared.fixed[0].amount: "-3" is negative; a cost is zero or more',
    ]
    check = run_finops("policy", "check", str(path))
    report = run_finops("report", "chargeback", "--policy", str(path), DATABASE_URL=database_url)
    for outcome in (check, report):
        assert outcome.returncode == 2 and outcome.stdout == ""
        assert outcome.stderr.splitlines() == expected


def test_a_yaml_syntax_error_is_one_line_with_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("currency: EUR\nshared:\n  namespaces: [kube-system\n")
    outcome = run_finops("policy", "check", str(path))
    assert outcome.returncode == 2
    line = one_line_error(outcome)
    assert line.startswith(f"finops: policy file {path}, line 4, column 1: not valid YAML: ")
    assert "<unicode string>" not in line


REPORTS = [
    ("chargeback", "--policy", DEMO_POLICY),
    ("team", "--policy", DEMO_POLICY, "--team", "web"),
    ("daily", "--days", "3"),
    ("unlabelled",),
    ("budgets", "--policy", DEMO_POLICY),
]


@pytest.mark.parametrize("report", REPORTS, ids=[r[0] for r in REPORTS])
def test_every_report_honours_every_format(db: object, database_url: str, report: tuple[str, ...]) -> None:
    _ledger_hour(database_url, "demo")
    shown = {}
    for form in ("table", "json", "csv"):
        outcome = run_finops("report", *report, "--format", form, DATABASE_URL=database_url, CLUSTER_ID="demo")
        assert outcome.returncode == 0, outcome.stderr
        shown[form] = outcome.stdout
    assert isinstance(json.loads(shown["json"]), dict)
    header, *_ = csv.reader(io.StringIO(shown["csv"]))
    assert len(header) >= 3 and not shown["csv"].startswith("{")
    assert not shown["table"].startswith("{") and "," not in shown["table"].splitlines()[-1]


def test_chargeback_defaults_to_the_last_full_month(db: object, database_url: str) -> None:
    default = run_finops("report", "chargeback", "--policy", DEMO_POLICY, "--format", "json", DATABASE_URL=database_url)
    last = run_finops(
        "report",
        "chargeback",
        "--policy",
        DEMO_POLICY,
        "--month",
        "last",
        "--format",
        "json",
        DATABASE_URL=database_url,
    )
    assert default.returncode == 0 and last.returncode == 0, default.stderr
    period = json.loads(default.stdout)["period"]
    assert period == json.loads(last.stdout)["period"]
    assert period["start"][:7] == arguments.month("last")


@pytest.mark.parametrize("bad", ["-5", "0", "169", "1x", ""])
def test_finops_run_refuses_a_bad_hours_count(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    from sandbox.run import main as run_main

    with pytest.raises(SystemExit) as exit_:
        run_main(["--once", "--hours", bad])
    assert exit_.value.code == 2
    assert f"argument --hours: {bad!r} is not a whole number from 1 to 168" in capsys.readouterr().err
