"""We test that the fleet's report is PostgreSQL's on generated months, not only on the sandbox's
days: hypothesis writes two clusters' final hours through ``collect_allocations``' own per-hour
path (owners and cost centres relabelled from hour to hour, idle rows, unknown costs, and now and
then an unpriced hour or one in another currency), the collector's own upload
(``upload_final_hours``) copies them into a local fleet folder, and then, under a generated policy
(idle separate or distributed, shared namespaces split evenly or in proportion, a fixed cost) and
line key, the fleet chargeback through DuckDB and through chDB:

- equals PostgreSQL's line for line (every figure to the cent), with the same clusters and the
  same final hours per cluster; or
- is refused with PostgreSQL's own message (a currency other than the policy's, an unpriced hour).
"""

from __future__ import annotations

import math
import tempfile
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from finops.chargeback import Report
from finops.errors import FinOpsError
from finops.periods import Period
from finops.policy import parse_policy
from infra.objectstore import ObjectStore
from infra.postgres import Database
from tests.conftest import TABLES
from tests.integration.generated_hours import AGGREGATION, Collector, Write, entries, hour_answer
from usecases.collect_allocations.fleet import upload_final_hours
from usecases.reports.fleet import fleet_chargeback
from usecases.reports.service import ReportQuery, chargeback

# Four hours over two UTC days: the fleet's day boundaries fall where PostgreSQL's do.
HOURS = [datetime(2026, 11, 20, h, tzinfo=UTC) for h in (22, 23)] + [
    datetime(2026, 11, 21, h, tzinfo=UTC) for h in (0, 7)
]
PERIOD = Period(datetime(2026, 11, 20, tzinfo=UTC), datetime(2026, 11, 22, tzinfo=UTC))
CLUSTERS = ("east", "west")

policies = st.fixed_dictionaries(
    {
        "currency": st.just("USD"),
        "idle": st.sampled_from(["separate", "distribute"]),
        "shared": st.fixed_dictionaries(
            {
                "namespaces": st.lists(st.sampled_from(["search", "batch"]), unique=True),
                "split": st.sampled_from(["even", "proportional"]),
                "fixed": st.sampled_from([[], [{"name": "control-plane", "amount": "7.30"}]]),
            }
        ),
    }
)
# Mostly the policy's currency: another one, or none (unpriced), is refused by all three.
currencies = st.sampled_from(["USD"] * 12 + ["EUR", None])
cluster_hours = st.dictionaries(
    st.sampled_from(HOURS),
    st.tuples(st.lists(entries, min_size=1, max_size=5).map(hour_answer), currencies),
    min_size=1,
)


def _empty(db: Database) -> None:
    with db.connection() as conn:
        tables = conn.execute(TABLES).fetchone()
        assert tables is not None
        conn.execute(f"TRUNCATE {next(iter(tables.values()))} RESTART IDENTITY CASCADE")


def _answer(report: Any) -> tuple[Any, ...]:
    """What a report says, or the refusal: its type and message."""
    if isinstance(report, FinOpsError):
        return type(report).__name__, report.message
    assert isinstance(report, Report) and report.coverage is not None
    final = [(c.cluster, c.final) for c in report.coverage.clusters]
    return report.lines, report.total, report.clusters, final


def _report(build: Any) -> Any:
    try:
        return build()
    except FinOpsError as exc:
        return exc


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    written=st.fixed_dictionaries({cluster: cluster_hours for cluster in CLUSTERS}),
    policy=policies,
    by=st.sampled_from(["team", "cost-center", "namespace"]),
)
def test_the_fleet_report_is_postgresqls_on_generated_months(
    db: Database, written: dict[str, dict[datetime, Any]], policy: dict[str, Any], by: str
) -> None:
    _empty(db)
    parsed = parse_policy(policy)
    with tempfile.TemporaryDirectory() as folder:
        prefix = f"{folder}/"
        for cluster, hours in written.items():
            collector = Collector(db, cluster)
            for hour, (found, currency) in sorted(hours.items()):
                collector.write(Write(hour, found, True, currency, False))
            done = upload_final_hours(db, ObjectStore(), prefix, cluster, AGGREGATION, deadline=math.inf)
            assert done.error is None and sorted(done.uploaded) == sorted(hours)
        report = _report(lambda: chargeback(db, parsed, ReportQuery(PERIOD, None, AGGREGATION), by))
        event("refused" if isinstance(report, FinOpsError) else "reported")
        expected = _answer(report)
        for engine in ("duckdb", "chdb"):
            found = _report(lambda engine=engine: fleet_chargeback(prefix, parsed, PERIOD, engine=engine, by=by))
            assert _answer(found) == expected, engine
