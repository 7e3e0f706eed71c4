"""The fleet bucket read by ClickHouse's engine: in process (``ClickHouseReader``, chDB) or on a
ClickHouse server or cluster (``ClickHouseServerReader``, clickhouse-connect), both from the
``clickhouse`` extra. The same rollup as DuckDB's (``infra.fleet``), in ClickHouse's dialect, over
its own ``s3()``/``s3Cluster()``/``file()`` table functions.
"""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from finops.errors import FinOpsError, InvalidInput
from finops.hours import hours_between
from finops.periods import Period
from infra.fleet import EPOCH, FleetReader, epoch_us
from infra.logs import redact

if TYPE_CHECKING:
    import pyarrow as pa


def _extra(module: str, engine: str) -> Any:
    """``module`` of the ``clickhouse`` extra, or ``InvalidInput`` saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InvalidInput(
            f"--engine {engine} needs the {module.replace('_', '-')} package "
            "(pip install 'finops-functions[clickhouse]')"
        ) from None


# The same rollup in ClickHouse's dialect, over ``{source}`` (its s3() or file() table function).
# ClickHouse resolves a SELECT alias anywhere in the query: no alias may repeat a column's name.
CLICKHOUSE_ROLLUP = """
SELECT cluster, namespace, entry_kind, nullIf(owner_key, '') AS owner, nullIf(center_key, '') AS center,
       toInt64(ifNull(sum(cost), 0)) AS total_micros
FROM (
    SELECT cluster, namespace, entry_kind, coalesce(team, '') AS owner_key, coalesce(cost_center, '') AS center_key,
           total_cost_micros AS cost
    FROM {source}
    WHERE toUnixTimestamp64Micro(hour) >= {start} AND toUnixTimestamp64Micro(hour) < {end}
)
GROUP BY cluster, namespace, entry_kind, owner_key, center_key
ORDER BY cluster, namespace, entry_kind, owner_key, center_key
SETTINGS use_hive_partitioning = 0
"""
CLICKHOUSE_HOURS = """
SELECT cluster, toUnixTimestamp64Micro(hour) AS hour_us, min(currency) AS low, max(currency) AS high,
       toInt64(count()) AS row_count
FROM {source}
WHERE toUnixTimestamp64Micro(hour) >= {start} AND toUnixTimestamp64Micro(hour) < {end}
GROUP BY cluster, hour_us
ORDER BY cluster, hour_us
SETTINGS use_hive_partitioning = 0
"""


class ClickHouseReader(FleetReader):
    """The same queries on ClickHouse's engine, in process (chDB), reading the files with its own
    ``s3()`` (credentials from the environment, as ClickHouse's ``use_environment_credentials``)
    or ``file()`` table function: the query a ClickHouse server runs (``ClickHouseServerReader``)."""

    engine = "chDB"

    def __init__(self, url: str, endpoint_url: str | None = None, field: str = "--fleet") -> None:
        super().__init__(url, endpoint_url, field)
        self.endpoint_url = endpoint_url

    def rollup_and_hours(self, period: Period) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        if not self.files(period):  # listed as for DuckDB: an empty period reads nothing
            return [], []
        window = {"start": epoch_us(period.start), "end": epoch_us(period.end), "source": self._source(period)}
        try:
            rollup = self._query(CLICKHOUSE_ROLLUP.format(**window))
            hours = self._query(CLICKHOUSE_HOURS.format(**window))
        except FinOpsError:
            raise
        except Exception as exc:  # the engine's errors: the message names the URL, and no secret is in the query
            first = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
            raise InvalidInput(f"{self.field}: {self.url} cannot be read by {self.engine}: {first}") from None
        return (
            [tuple(row.values()) for row in rollup.to_pylist()],
            [(r["cluster"], EPOCH + timedelta(microseconds=r["hour_us"]), r["low"], r["high"], r["row_count"])
             for r in hours.to_pylist()],
        )  # fmt: skip

    def _query(self, sql: str) -> pa.Table:
        chdb = _extra("chdb", "chdb")
        table: pa.Table = chdb.query(sql, "ArrowTable")
        return table

    def _source(self, period: Period) -> str:
        """The table function over the period's days (a glob of their ``date=`` folders)."""
        days = sorted({f"{hour.start:%Y-%m-%d}" for hour in hours_between(period.start, period.end)})
        glob = f"cluster=*/date={{{','.join(days)}}}/hour=*.parquet"
        if not self.url.startswith("s3://"):
            return f"file({_quote(self.url + glob)}, 'Parquet')"
        bucket, _, prefix = self.url.removeprefix("s3://").partition("/")
        base = f"{self.endpoint_url}/{bucket}/" if self.endpoint_url else f"https://{bucket}.s3.amazonaws.com/"
        return self._s3(_quote(base + prefix + glob))

    def _s3(self, url: str) -> str:
        return f"s3({url}, 'Parquet')"


class ClickHouseServerReader(ClickHouseReader):
    """The same queries sent to a ClickHouse server through clickhouse-connect (HTTP or HTTPS,
    ``server``: ``http[s]://user:password@host:port``), which reads the bucket itself with its
    ``s3()`` table function and its own S3 credentials; with ``cluster``, with ``s3Cluster`` over
    that cluster's servers (each reads its share of the files). The server cannot read this
    machine's folders: the bucket must be ``s3://``."""

    engine = "ClickHouse"

    def __init__(
        self, url: str, endpoint_url: str | None, field: str, *, server: str, cluster: str | None = None
    ) -> None:
        super().__init__(url, endpoint_url, field)
        if not url.startswith("s3://"):
            raise InvalidInput(f"{field}: a ClickHouse server reads the bucket itself: give s3://bucket/prefix/")
        self.server, self.cluster = server, cluster

    def _query(self, sql: str) -> pa.Table:
        clickhouse_connect = _extra("clickhouse_connect", "clickhouse")
        client = clickhouse_connect.get_client(dsn=self.server, compress=False)
        try:
            return client.query_arrow(sql)
        finally:
            client.close()

    def _s3(self, url: str) -> str:
        if self.cluster is None:
            return super()._s3(url)
        return f"s3Cluster({_quote(self.cluster)}, {url}, 'Parquet')"


def _quote(text: str) -> str:
    """A ClickHouse string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
