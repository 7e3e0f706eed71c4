"""The daily rollups (``allocation_daily``) follow the marks on their days, never a run's memory.

An hour write marks its UTC day (``allocation_dirty_days``) in the hour's own transaction; these
functions rebuild a marked day from its hourly rows in the transaction that clears the mark. The
collector rebuilds every marked day at the end of each run (even one that failed midway), and
every report rebuilds the marked days before reading, so a report never reads a rollup that
disagrees with the rows, even right after a killed run.
"""

from __future__ import annotations

from datetime import date

from infra.postgres import Database


def rebuild_marked_days(db: Database, cluster: str | None = None, aggregation: str | None = None) -> int:
    """Rebuild every marked day (of one cluster and aggregation, or all); returns how many."""
    marked = db.fetch_all("marked_days", cluster=cluster, aggregation=aggregation)
    for row in marked:
        rebuild_day(db, row["cluster"], row["aggregation"], row["day"])
    return len(marked)


def rebuild_day(db: Database, cluster: str, aggregation: str, day: date) -> None:
    """Recompute one day's rollup from its hours and clear its mark, in one transaction under the
    day's lock (an hour write takes the same lock, so a mark set meanwhile is never cleared)."""
    key = {"cluster": cluster, "aggregation": aggregation, "day": day}
    with db.connection() as conn:
        db.execute("lock_allocation_day", conn, **key)
        db.execute("delete_allocation_day", conn, **key)
        db.execute("rollup_allocation_day", conn, **key)
        db.execute("clear_dirty_day", conn, **key)
