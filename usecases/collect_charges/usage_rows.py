"""The allocation rows usage is priced from: where they stop being final (``UsageBoundary``, from
the hour ledger) and a batch's rows, read in one query and indexed (``Usage``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from finops.hours import HOUR, Hour
from finops.ledger import first_unsettled
from finops.usage import UsageRow
from infra.postgres import Database

RATE_COLUMNS = {  # spec.rates key -> its exact pricebooks column (numeric, currency units)
    "cpuHour": "cpu_hour",
    "ramGbHour": "ram_gb_hour",
    "pvGbHour": "pv_gb_hour",
    "gpuHour": "gpu_hour",
    "networkGiB": "network_gib",
}


class UsageBoundary:
    """Where a source's usage stops being final: ``boundary(start)`` is the first hour at or after
    ``start`` that the hour ledger does not hold as settled (``finops.ledger.first_unsettled``),
    never after the pinned hour. Settled hours are read once per run, further back only on demand,
    and always *before* the usage rows of those hours are read: an hour a concurrent run settles
    in between then counts as not settled (its charge stays open and is priced again next run),
    never as settled with the rows read before it was."""

    def __init__(self, db: Database, cluster: str, aggregation: str, pinned: Hour) -> None:
        self.db, self.end = db, pinned.start
        self.key: dict[str, Any] = {"cluster": cluster, "aggregation": aggregation}
        self.ledger_start: datetime | None = (db.fetch_one("ledger_start", **self.key) or {}).get("hour")
        self.read_from = self.end
        self.settled: set[datetime] = set()

    def __call__(self, start: datetime) -> datetime:
        if start < self.read_from:
            rows = self.db.fetch_all("settled_hours", **self.key, start=start, end=self.read_from)
            self.settled.update(row["hour"] for row in rows)
            self.read_from = start
        return first_unsettled(start, self.end, self.settled, self.ledger_start)


def usage_row(row: Mapping[str, Any]) -> UsageRow:
    start = row["data_start"] or row["hour"]
    end = row["data_end"] or row["hour"] + HOUR
    rates = None if row["rates_id"] is None else {field: row[col] for field, col in RATE_COLUMNS.items()}
    return UsageRow(
        start=start,
        end=end,
        cpu_core_usage_avg=row["cpu_core_usage_avg"],
        gpu_usage_avg=None,
        ram_byte_usage_avg=row["ram_byte_usage_avg"],
        pv_byte_hours=row["pv_byte_hours"],
        network_transfer_bytes=row["network_transfer_bytes"],
        network_receive_bytes=row["network_receive_bytes"],
        rates=rates,
        key=f"{row['namespace']}/{row['pod']}",
    )


class Usage:
    """A batch's allocation rows, indexed by namespace, by controller and by pod, so each
    Subscription looks only at the rows its ``usageSources`` can name (not at every row of its
    namespace: many Subscriptions share one)."""

    def __init__(self, rows: Iterable[Mapping[str, Any]] = ()) -> None:
        self.by_namespace: dict[str, list[Mapping[str, Any]]] = {}
        self.by_controller: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        self.by_pod: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for row in rows:
            namespace = row["namespace"]
            self.by_namespace.setdefault(namespace, []).append(row)
            self.by_controller.setdefault((namespace, row["controller"]), []).append(row)
            self.by_pod.setdefault((namespace, row["pod"]), []).append(row)

    def candidates(self, sources: list[Mapping[str, Any]], default: str) -> list[Mapping[str, Any]]:
        """Every row some entry of ``sources`` may match (each once); ``matches`` decides."""
        found: dict[int, Mapping[str, Any]] = {}
        for source in sources:
            namespace, name = str(source.get("namespace") or default), source.get("name")
            if name is None:
                pool = self.by_namespace.get(namespace, [])
            elif source.get("resourceType") == "Pod":
                pool = self.by_pod.get((namespace, name), [])
            else:
                pool = self.by_controller.get((namespace, name), [])
            found.update((id(row), row) for row in pool)
        return list(found.values())


def read_usage(
    db: Database, cluster: str, aggregation: str, windows: Mapping[str, list[tuple[datetime, datetime]]]
) -> Usage:
    """The allocation rows of ``windows`` (one query)."""
    flat = [(namespace, start, end) for namespace, spans in windows.items() for start, end in spans]
    if not flat:
        return Usage()
    return Usage(
        db.fetch_all(
            "usage_rows",
            cluster=cluster,
            aggregation=aggregation,
            namespaces=[w[0] for w in flat],
            starts=[w[1] for w in flat],
            ends=[w[2] for w in flat],
        )
    )
