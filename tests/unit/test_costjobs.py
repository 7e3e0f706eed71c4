"""We test these aspects of CostJob compatibility:

- the documented intervals map as the operator did, matched on the parsed duration (60m is 1h);
- any other interval that cron expresses cleanly gets its schedule (2h, 3h, 8h, 30m, 15m);
- an interval cron cannot express is refused with a clear error, never run daily;
- timeouts are parsed as Go durations; the two no-op timeouts are reported as ignored.
"""

from __future__ import annotations

import pytest

from finops.costjobs import parse_costjob, parse_duration, schedule_for
from finops.errors import InvalidInput


@pytest.mark.parametrize(
    ("interval", "cron"),
    [
        ("1h", "0 * * * *"),
        ("6h", "0 */6 * * *"),
        ("12h", "0 */12 * * *"),
        ("24h", "0 0 * * *"),
        ("1m", "* * * * *"),
        ("5m", "*/5 * * * *"),
        ("60m", "0 * * * *"),
        ("1440m", "0 0 * * *"),
        ("2h", "0 */2 * * *"),
        ("3h", "0 */3 * * *"),
        ("8h", "0 */8 * * *"),
        ("30m", "*/30 * * * *"),
        ("15m", "*/15 * * * *"),
        ("120m", "0 */2 * * *"),
        ("3600s", "0 * * * *"),
    ],
)
def test_intervals_map_to_cron(interval: str, cron: str) -> None:
    assert schedule_for(interval) == cron


@pytest.mark.parametrize("interval", ["45m", "90m", "1h30m", "5h", "48h", "7d", "30s", "0m", "soon", ""])
def test_intervals_cron_cannot_express_are_refused(interval: str) -> None:
    with pytest.raises(InvalidInput, match=r"spec\.interval"):
        schedule_for(interval)


def test_durations() -> None:
    assert parse_duration("1h30m", field="x") == 5400
    assert parse_duration("2m30s", field="x") == 150
    assert parse_duration("1500ms", field="x") == 1.5


def test_costjob_timeouts_and_ignored_fields() -> None:
    spec = parse_costjob(
        {
            "metadata": {"namespace": "finops", "name": "hourly"},
            "spec": {
                "type": "ResourceCostCollection",
                "interval": "60m",
                "openCostFetchTimeout": "30s",
                "databaseInsertTimeout": "3m",
                "databaseViewsRefreshTimeout": "1m",
                "httpClientTimeout": "90s",
            },
        }
    )
    assert spec.schedule == "0 * * * *" and spec.target_service == "collect-allocations"
    assert spec.timeouts == {"openCostFetchTimeout": 30, "databaseInsertTimeout": 180}
    assert spec.ignored == ("databaseViewsRefreshTimeout", "httpClientTimeout")
    with pytest.raises(InvalidInput, match=r"CostJob finops/bad: spec\.interval"):
        parse_costjob({"metadata": {"namespace": "finops", "name": "bad"}, "spec": {"interval": "45m"}})
    with pytest.raises(InvalidInput, match=r"spec\.type"):
        parse_costjob({"metadata": {"name": "x"}, "spec": {"type": "Nope"}})
