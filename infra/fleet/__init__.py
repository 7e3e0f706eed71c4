"""The fleet bucket's hourly Parquet files: their columns and types (written by
``usecases.collect_allocations.fleet``), and reading them back through DuckDB embedded in the
process (``FleetReader``, for ``usecases.reports.fleet``).

Reading: the files are listed first and only the period's are read (a file's path says its cluster
and hour: ``cluster=<id>/date=<YYYY-MM-DD>/hour=<HH>.parquet``). pyarrow reads them, with its own
S3 filesystem (no engine extension is downloaded at run time), and DuckDB scans pyarrow's dataset.
Times in the queries are microseconds since the epoch: UTC whatever the engine's time zone.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, BinaryIO

from finops.errors import InvalidInput, NotFound
from finops.periods import Period

if TYPE_CHECKING:
    import pyarrow as pa
    from pyarrow import fs

_TEXT = ("cluster", "namespace", "name", "aggregation", "entry_kind", "controller_kind", "controller", "pod",
         "container", "node")  # fmt: skip
_TIMES = ("hour", "data_start", "data_end")
_QUANTITIES = ("minutes", "cpu_cores", "cpu_core_request_avg", "cpu_core_usage_avg", "cpu_core_hours", "ram_bytes",
               "ram_byte_request_avg", "ram_byte_usage_avg", "ram_byte_hours", "gpu_count", "gpu_hours", "pv_bytes",
               "pv_byte_hours", "network_transfer_bytes", "network_receive_bytes")  # fmt: skip
_MICROS = ("cpu_cost_micros", "gpu_cost_micros", "ram_cost_micros", "pv_cost_micros", "network_cost_micros",
           "lb_cost_micros", "shared_cost_micros", "external_cost_micros", "total_cost_micros")  # fmt: skip
_OWNERS = ("team", "cost_center")
_PRICING = ("pricebook_id", "currency", "source")
COLUMNS = (*_TEXT, *_TIMES, *_QUANTITIES, *_MICROS, *_OWNERS, *_PRICING)


def schema() -> pa.Schema:
    import pyarrow as pa

    def kind(name: str) -> pa.DataType:
        if name in _TIMES:
            return pa.timestamp("us", tz="UTC")
        return pa.int64() if name in (*_MICROS, "pricebook_id") else pa.string()

    return pa.schema([pa.field(name, kind(name)) for name in COLUMNS])


def write_hour(rows: list[dict[str, Any]], out: BinaryIO) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    shape = schema()
    table = pa.table({name: pa.array([row[name] for row in rows], shape.field(name).type) for name in COLUMNS})
    pq.write_table(table, out)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FILE = re.compile(r"cluster=(?P<cluster>[^/]+)/date=(?P<date>\d{4}-\d{2}-\d{2})/hour=(?P<hour>\d{2})\.parquet$")

# The per-day rollup the reports consume (allocation_daily), then summed over the period.
ROLLUP = """
WITH daily AS (
    SELECT epoch_us(hour) // 86400000000 AS day, cluster, namespace, entry_kind, coalesce(team, '') AS team,
           coalesce(cost_center, '') AS cost_center, sum(total_cost_micros) AS micros
    FROM hours
    WHERE epoch_us(hour) >= ? AND epoch_us(hour) < ?
    GROUP BY ALL
)
SELECT cluster, namespace, entry_kind, nullif(team, '') AS owner, nullif(cost_center, '') AS cost_center,
       CAST(sum(micros) AS BIGINT) AS micros
FROM daily
GROUP BY cluster, namespace, entry_kind, team, cost_center
ORDER BY ALL
"""
# Each cluster's hours in the files, with their currencies (two differing: the hour mixes them).
HOURS = """
SELECT cluster, epoch_us(hour) AS hour, min(currency) AS currency, max(currency) AS other, count(*) AS rows
FROM hours
WHERE epoch_us(hour) >= ? AND epoch_us(hour) < ?
GROUP BY cluster, epoch_us(hour)
ORDER BY cluster, hour
"""


class FleetReader:
    """The fleet bucket at ``url`` (``s3://bucket/prefix/`` or a local folder, ending in ``/``)."""

    def __init__(self, url: str, endpoint_url: str | None = None) -> None:
        from pyarrow import fs

        if not url.endswith("/"):
            raise InvalidInput(f"--fleet: {url} is not a folder (s3://bucket/prefix/ or a path ending in /)")
        self.url = url
        self.filesystem: fs.FileSystem
        if url.startswith("s3://"):
            options: dict[str, Any] = {}
            if endpoint_url:
                scheme, _, host = endpoint_url.partition("://")
                options = {"endpoint_override": host, "scheme": scheme}
            self.filesystem, self.root = fs.S3FileSystem(**options), url.removeprefix("s3://")
        else:
            self.filesystem, self.root = fs.LocalFileSystem(), url

    def files(self, period: Period) -> list[str]:
        """The files of the hours starting in ``period``."""
        from pyarrow import fs

        try:
            listed = self.filesystem.get_file_info(fs.FileSelector(self.root, recursive=True))
        except FileNotFoundError:
            raise NotFound(f"--fleet: {self.url} does not exist") from None
        except OSError as exc:  # pyarrow's S3 errors: the message names the bucket, never a secret
            raise InvalidInput(f"--fleet: {self.url} cannot be listed: {str(exc).splitlines()[0]}") from None
        found = []
        for info in listed:
            match = _FILE.search(info.path)
            if match is not None:
                hour = datetime.fromisoformat(f"{match['date']}T{match['hour']}:00:00+00:00")
                if period.start <= hour < period.end:
                    found.append(info.path)
        return sorted(found)

    def rollup_and_hours(self, period: Period) -> tuple[list[tuple[Any, ...]], list[tuple[datetime, ...]]]:
        """The period's cost per cluster, namespace, entry kind, owner and cost centre (``ROLLUP``),
        and each cluster's hours with their currencies and row counts (``HOURS``, hours as UTC
        datetimes)."""
        import duckdb
        import pyarrow.dataset as ds

        files = self.files(period)
        con = duckdb.connect()
        try:
            table = ds.dataset(files, filesystem=self.filesystem, format="parquet", schema=schema()) if files else None
            con.register("hours", table if table is not None else schema().empty_table())
            window = [_epoch_us(period.start), _epoch_us(period.end)]
            rollup = con.execute(ROLLUP, window).fetchall()
            hours = [
                (c, _EPOCH + timedelta(microseconds=h), *rest) for c, h, *rest in con.execute(HOURS, window).fetchall()
            ]
        finally:
            con.close()
        return rollup, hours


def _epoch_us(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)
