"""The daily rollups (``allocation_daily``): each hour written is folded into its day.

Folding: in the hour's own transaction, under the day's lock, the hour's old rows are subtracted
from the day's rollup rows before they are deleted (``unfold_hour``), and its new rows are added
once written (``fold_hour``). One fold costs what the hour's rows cost (one index range of
``provider_allocations``, one primary-key lookup per rollup row touched), however many hours the
day or its month partition already holds; a killed run leaves both the hour and its fold, or
neither. Every figure of a rollup row is additive over hours (migration 015 lists each one's rule),
and a row whose last hour leaves is deleted, so a folded day equals its rebuild to the last digit.

Marks remain for what a fold cannot do: a day whose hours mix currencies (``max(currency)`` is not
additive), a day already marked (the rebuild that clears the mark recomputes it anyway; migration
015 marks every stored day once), and a rollup found disagreeing with the rows. Such a day is
marked (``allocation_dirty_days``) in the hour's transaction and rebuilt from its hourly rows in
the transaction that clears the mark: the collector rebuilds every marked day at the end of each
run (even one that failed midway), and every report rebuilds the marked days before reading.
``rebuild_day`` is also the repair tool.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from infra.postgres import Database
from infra.postgres.database import Connection


def unfold_hour(db: Database, conn: Connection, key: dict[str, Any], currency: str | None) -> bool:
    """Before an hour's rows are replaced (``key``: cluster, aggregation, hour; ``currency``: the
    new rows'), in the hour's transaction: take the day's lock and subtract the rows stored for the
    hour from the day's rollup. False when the write cannot be folded; ``fold_hour`` then marks the
    day instead."""
    day = _day(key)
    db.execute("lock_allocation_day", conn, **day)
    found = db.fetch_one("hour_foldable", conn, **day, currency=currency)
    if not (found and found["foldable"]):
        return False
    unfolded = db.fetch_one("unfold_allocation_hour", conn, **key)
    return bool(unfolded and unfolded["missing"] == 0)


def fold_hour(db: Database, conn: Connection, key: dict[str, Any], folding: bool) -> None:
    """After an hour's rows are written, in the same transaction: add them to the day's rollup, or
    mark the day for a rebuild when ``unfold_hour`` said the write cannot be folded."""
    if folding:
        db.execute("fold_allocation_hour", conn, **key)
    else:
        db.execute("mark_dirty_day", conn, **key)


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


def _day(key: dict[str, Any]) -> dict[str, Any]:
    hour: datetime = key["hour"]
    return {"cluster": key["cluster"], "aggregation": key["aggregation"], "day": hour.astimezone(UTC).date()}
