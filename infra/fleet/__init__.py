"""The fleet bucket's hourly Parquet files: their columns and types (written by
``usecases.collect_allocations.fleet``), and reading them back through DuckDB embedded in the
process (``FleetReader``), for ``usecases.reports.fleet``; ClickHouse's engine reads them in
``infra.fleet.clickhouse``.

Reading: the files right under the bucket's prefix are listed first and only the period's are read
(a file's path says its cluster and hour: ``cluster=<id>/date=<YYYY-MM-DD>/hour=<HH>.parquet``).
DuckDB reads local files with its own Parquet reader and S3 through pyarrow's S3 filesystem,
streamed (DuckDB's own S3 reader is an extension it would download at run time); chDB reads them
with ClickHouse's ``s3()``/``file()``. The cost is summed per cluster, namespace, entry kind, owner
and cost centre straight over the period: integer micros add up the same in any grouping, so the
daily rollup PostgreSQL keeps is not needed here. Times in the queries are microseconds since the
epoch: UTC whatever the engine's time zone. A missing cost (OpenCost without ``totalCost``) is 0,
as in PostgreSQL's rollups.
"""

from __future__ import annotations

import re
import tempfile
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, BinaryIO

from finops.errors import InvalidInput, NotFound
from finops.periods import Period
from infra.logs import redact

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
# Dictionary-encoded: the columns of few values an hour. A container's names, figures and costs
# are nearly all distinct, so a dictionary would only cost its writing (half the write's time).
DICTIONARY = ["cluster", "namespace", "aggregation", "entry_kind", "controller_kind", "node", "hour", "data_start",
              "data_end", "minutes", "team", "cost_center", "pricebook_id", "currency", "source"]  # fmt: skip


def schema() -> pa.Schema:
    import pyarrow as pa

    def kind(name: str) -> pa.DataType:
        if name in _TIMES:
            return pa.timestamp("us", tz="UTC")
        return pa.int64() if name in (*_MICROS, "pricebook_id") else pa.string()

    return pa.schema([pa.field(name, kind(name)) for name in COLUMNS])


def write_hour(rows: bytes, out: BinaryIO) -> int:
    """The hour's rows (PostgreSQL's CSV of them, ``COLUMNS`` in order: ``Database.fetch_csv``) as
    one Parquet file, parsed by pyarrow straight into its columns; returns the rows written. An
    empty field is NULL, a quoted one a string (``""`` an empty one)."""
    import io

    import pyarrow.csv as csv
    import pyarrow.parquet as pq

    shape = schema()
    table = csv.read_csv(
        io.BytesIO(rows),
        read_options=csv.ReadOptions(column_names=shape.names),
        parse_options=csv.ParseOptions(newlines_in_values=True),
        convert_options=csv.ConvertOptions(
            column_types=shape, strings_can_be_null=True, quoted_strings_can_be_null=False, null_values=[""]
        ),
    )
    pq.write_table(table.combine_chunks(), out, use_dictionary=DICTIONARY)
    written: int = table.num_rows
    return written


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FILE = re.compile(r"cluster=(?P<cluster>[^/]+)/date=(?P<date>\d{4}-\d{2}-\d{2})/hour=(?P<hour>\d{2})\.parquet")

# The period's cost per cluster, namespace, entry kind, owner, cost centre and currency.
ROLLUP = """
SELECT cluster, namespace, entry_kind, coalesce(team, '') AS owner_key, coalesce(cost_center, '') AS center_key,
       currency, CAST(coalesce(sum(total_cost_micros), 0) AS BIGINT) AS micros
FROM {source}
GROUP BY ALL
"""

# One pass over the files, two groupings: the period's cost per cluster, namespace, entry kind,
# owner and cost centre, and each cluster's hours with their currencies and row counts (two
# differing currencies: the hour mixes them). ``by_cost`` says which grouping a row is of.
SCAN = """
SELECT cluster, epoch_us(hour) AS hour_us, namespace, entry_kind,
       coalesce(team, '') AS owner_key, coalesce(cost_center, '') AS center_key,
       CAST(coalesce(sum(total_cost_micros), 0) AS BIGINT) AS micros, min(currency) AS low, max(currency) AS high,
       count(*) AS row_count, GROUPING(hour_us) AS by_cost
FROM {source}
GROUP BY GROUPING SETS ((cluster, namespace, entry_kind, owner_key, center_key), (cluster, hour_us))
"""


# The team report's and the FOCUS export's figures (DuckDB only): per day, as PostgreSQL's
# focus_daily_rows (day: days since the epoch, UTC), and per namespace with requests against
# usage, as its owner_namespaces. Quantities are exact strings in the files: cast to decimals
# (every OpenCost figure has far fewer places), the products summed before the division by 60
# (done exactly in Python), so no sum can overflow or round.
DAILY = """
SELECT cluster, epoch_us(hour) // 86400000000 AS day_number, namespace, entry_kind = 'idle' AS is_idle,
       coalesce(team, '') AS owner_key, coalesce(cost_center, '') AS center_key,
       CAST(coalesce(sum(total_cost_micros), 0) AS BIGINT) AS micros,
       coalesce(sum(CAST(cpu_core_hours AS DECIMAL(38, 18))), 0) AS core_hours
FROM {source}
GROUP BY ALL
"""
NAMESPACES = """
SELECT cluster, namespace, coalesce(team, '') AS owner_key, coalesce(cost_center, '') AS center_key,
       CAST(coalesce(sum(total_cost_micros), 0) AS BIGINT) AS micros,
       coalesce(sum(CAST(cpu_core_hours AS DECIMAL(38, 18))), 0) AS billed_cores,
       coalesce(sum(CAST(cpu_core_request_avg AS DECIMAL(38, 12)) * mins), 0) AS requested_core_minutes,
       coalesce(sum(CAST(cpu_core_usage_avg AS DECIMAL(38, 12)) * mins), 0) AS used_core_minutes,
       coalesce(sum(CAST(ram_byte_hours AS DECIMAL(38, 6))), 0) AS billed_bytes,
       coalesce(sum(CAST(ram_byte_request_avg AS DECIMAL(38, 6)) * mins), 0) AS requested_byte_minutes,
       coalesce(sum(CAST(ram_byte_usage_avg AS DECIMAL(38, 6)) * mins), 0) AS used_byte_minutes
FROM (SELECT *, CAST(minutes AS DECIMAL(38, 6)) AS mins FROM {source} WHERE entry_kind <> 'idle')
GROUP BY ALL
"""
_DAILY_COLUMNS = ["cluster", "hour", "namespace", "entry_kind", "team", "cost_center", "total_cost_micros",
                  "cpu_core_hours"]  # fmt: skip
_NAMESPACE_COLUMNS = ["cluster", "namespace", "entry_kind", "team", "cost_center", "total_cost_micros", "minutes",
                      "cpu_core_hours", "cpu_core_request_avg", "cpu_core_usage_avg", "ram_byte_hours",
                      "ram_byte_request_avg", "ram_byte_usage_avg"]  # fmt: skip
_GIB = Decimal(2) ** -30


# Memory bounded by design: past the limit DuckDB's aggregation spills to the temporary folder.
DUCKDB_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "memory_limit": "512MB",
    "preserve_insertion_order": False,
    "temp_directory": tempfile.gettempdir(),  # not the working directory (read-only in a pod)
}


class FleetReader:
    """The fleet bucket at ``url`` (``s3://bucket/prefix/`` or a local folder, ending in ``/``)."""

    def __init__(self, url: str, endpoint_url: str | None = None, field: str = "--fleet") -> None:
        from pyarrow import fs

        self.url, self.field = check_bucket(url, field), field
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
            raise NotFound(f"{self.field}: {self.url} does not exist") from None
        except OSError as exc:  # pyarrow's S3 errors: the message names the bucket, never a secret
            raise InvalidInput(f"{self.field}: {self.url} cannot be listed: {str(exc).splitlines()[0]}") from None
        root = self.root.rstrip("/") + "/"
        found = []
        for info in listed:  # only this prefix's own layout, not another prefix nested under it
            match = _FILE.fullmatch(info.path.removeprefix(root))
            if match is not None:
                hour = datetime.fromisoformat(f"{match['date']}T{match['hour']}:00:00+00:00")
                if period.start <= hour < period.end:
                    found.append(info.path)
        return sorted(found)

    def rollup_and_hours(self, period: Period) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The period's cost per cluster, namespace, entry kind, owner and cost centre (micros),
        and each cluster's hours (UTC) with their lowest and highest currency and row count: local
        files through DuckDB's own Parquet reader, S3 through pyarrow's, streamed (DuckDB's S3
        reader is an extension it would download).

        One aggregation (``ROLLUP``) when every cluster's rows are in one currency: each file is
        then a final hour in it (its rows counted as one: only "some" matters). Otherwise, which
        hours mix currencies or have none is read in a second pass (``SCAN``), so the refusal
        names them as PostgreSQL's does."""
        files = self.files(period)
        columns = ["cluster", "namespace", "entry_kind", "team", "cost_center", "currency", "total_cost_micros"]
        found = self._scan(period, ROLLUP, columns, files)
        currencies: dict[str, set[str | None]] = defaultdict(set)
        for cluster, *_, currency, _micros in found:
            currencies[cluster].add(currency)
        listed = [_FILE.search(path) for path in files]
        if all(len(c) == 1 and None not in c for c in currencies.values()) and all(
            match is not None and match["cluster"] in currencies for match in listed
        ):
            rollup = [(cluster, ns, kind, owner or None, center or None, micros)
                      for cluster, ns, kind, owner, center, _, micros in found]  # fmt: skip
            hours = []
            for match in listed:
                assert match is not None  # checked above
                (currency,) = currencies[match["cluster"]]
                hour = datetime.fromisoformat(f"{match['date']}T{match['hour']}:00:00+00:00")
                hours.append((match["cluster"], hour, currency, currency, 1))
            return sorted(rollup, key=str), sorted(hours, key=lambda hour: (hour[0], hour[1]))
        columns = ["cluster", "hour", "namespace", "entry_kind", "team", "cost_center", "currency", "total_cost_micros"]
        found = self._scan(period, SCAN, columns, files)
        rollup, hours = [], []
        for cluster, hour_us, namespace, kind, owner, center, micros, low, high, count, by_cost in found:
            if by_cost:  # the hour is not in this grouping: a cost row
                rollup.append((cluster, namespace, kind, owner or None, center or None, micros))
            else:
                hours.append((cluster, EPOCH + timedelta(microseconds=hour_us), low, high, count))
        return sorted(rollup, key=str), sorted(hours, key=lambda hour: (hour[0], hour[1]))

    def daily(self, period: Period) -> list[dict[str, Any]]:
        """The period's cost and billed core-hours per day, cluster, namespace, owner and cost
        centre, idle apart (``is_idle``): the rows of PostgreSQL's ``focus_daily_rows``."""
        return [
            {"cluster": cluster, "day": EPOCH.date() + timedelta(days=day), "namespace": namespace,
             "is_idle": idle, "owner": owner or None, "cost_center": center or None, "micros": micros,
             "core_hours": cores}
            for cluster, day, namespace, idle, owner, center, micros, cores in self._scan(period, DAILY, _DAILY_COLUMNS)
        ]  # fmt: skip

    def namespaces(self, period: Period) -> list[dict[str, Any]]:
        """The period's namespaces with their owner, cost centre, cost and requests against usage
        (billed, requested and used core-hours and GiB-hours): PostgreSQL's ``owner_namespaces``,
        most expensive first."""
        found = []
        for cluster, namespace, owner, center, micros, *quantities in self._scan(
            period, NAMESPACES, _NAMESPACE_COLUMNS
        ):
            billed_cores, requested_cores, used_cores, billed_bytes, requested_bytes, used_bytes = quantities
            found.append(
                {"cluster": cluster, "namespace": namespace, "owner": owner or None, "cost_center": center or None,
                 "micros": micros, "billed_core_hours": billed_cores, "requested_core_hours": requested_cores / 60,
                 "used_core_hours": used_cores / 60, "billed_gib_hours": billed_bytes * _GIB,
                 "requested_gib_hours": requested_bytes / 60 * _GIB, "used_gib_hours": used_bytes / 60 * _GIB}
            )  # fmt: skip
        return sorted(found, key=lambda row: (-row["micros"], row["cluster"], row["namespace"]))

    def _scan(
        self, period: Period, query: str, columns: list[str], files: list[str] | None = None
    ) -> list[tuple[Any, ...]]:
        """``query`` over the period's files (its ``{source}``): local files through DuckDB's own
        Parquet reader, S3 through pyarrow's, streamed (DuckDB's S3 reader is an extension it would
        download), only ``columns`` read."""
        import duckdb
        import pyarrow.dataset as ds

        files = self.files(period) if files is None else files
        if not files:
            return []
        con = duckdb.connect(config=DUCKDB_CONFIG)
        try:
            if not self.url.startswith("s3://"):
                return con.execute(query.format(source="read_parquet($files)"), {"files": files}).fetchall()
            dataset = ds.dataset(files, filesystem=self.filesystem, format="parquet", schema=schema())
            reader = dataset.scanner(columns=columns, batch_readahead=2, fragment_readahead=2).to_reader()
            con.register("hours", reader)
            return con.execute(query.format(source="hours")).fetchall()
        except (duckdb.Error, OSError) as exc:  # a damaged file, a read cut short: named, one line
            raise InvalidInput(f"{self.field}: {self.url} cannot be read: {str(exc).splitlines()[0]}") from None
        finally:
            con.close()


def check_bucket(url: str, field: str) -> str:
    """``url`` if it names a fleet bucket (``s3://bucket/prefix/`` or an absolute folder, ending in
    ``/``), else ``InvalidInput`` naming ``field``."""
    bucket = url.removeprefix("s3://").partition("/")[0]
    if not url.endswith("/") or not (url.startswith("/") or (url.startswith("s3://") and bucket)):
        raise InvalidInput(f"{field}: {redact(url)!r} is not s3://bucket/prefix/ or an absolute folder, ending in /")
    return url


def epoch_us(moment: datetime) -> int:
    """Microseconds since the epoch: the queries' times, UTC whatever the engine's time zone."""
    return (moment - EPOCH) // timedelta(microseconds=1)
