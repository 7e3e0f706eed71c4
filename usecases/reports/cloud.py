"""Cloud spend outside the cluster: import a FOCUS or AWS CUR 2.0 report, read it back for the
chargeback.

``finops import cloud --from PATH|s3://bucket/key [--s3-endpoint URL]`` reads a CSV report
(gzip-compressed too, as CUR 2.0 writes them; Parquet is not read), parses every row
(``finops.cloudspend``: format, columns read and tag keys; ``finops.cloudcharges``: the charge
category table and CUR's amortised cost) and stores it in ``cloud_costs``: the billed cost, the
effective (amortised) cost, and the charge category (``charge_category``: usage, discount,
purchase, tax or support). An import is all or nothing and idempotent: a bad row fails the file,
naming the row and column, and nothing is stored; a good file replaces, in one transaction,
every row imported before from the same source (its URL; a local path is made absolute), so
importing it again never duplicates it.

The chargeback reads the stored lines back through ``usecases.reports.reconciled``: lines of a
cluster (matching its nodes, disks or load balancers, or tagged with its name) belong to that
cluster's figures; the others are direct costs, at their effective cost when the report gave one,
else their billed cost; tax, support and commitment fees are shared. A charge in another currency
than the policy's is refused (``InvalidInput``): reports never convert.

A database that is not migrated (no ``cloud_costs`` table, or migrations pending) is refused
before anything is read, with one line saying to run ``finops migrate``: an import is often run
with credentials that may not change the schema, and a mistyped ``DATABASE_URL`` must not get a
schema created in the wrong database.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from finops.cloudspend import CloudCost, CloudFormat, parse_cloud_costs
from finops.errors import InvalidInput, PermanentError
from infra.objectstore import ObjectStore, is_s3
from infra.postgres import Database
from infra.postgres.migrations import available

TABLE_COLUMNS = (
    "source",
    "row_number",
    "format",
    "charge_start",
    "charge_end",
    "billed_cost_micros",
    "effective_cost_micros",
    "currency",
    "service",
    "resource_id",
    "account",
    "team",
    "cost_center",
    "tags",
    "charge_category",
    "commitment_id",
)
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class CloudImport:
    source: str
    format: CloudFormat
    rows: int
    replaced: int  # rows of an earlier import of the same source, now gone
    untagged: int  # rows without an owner tag: the chargeback's __unallocated__
    first_charge: datetime | None
    last_charge: datetime | None

    def as_document(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format.value,
            "rows": self.rows,
            "replaced": self.replaced,
            "untagged": self.untagged,
            "first_charge": None if self.first_charge is None else self.first_charge.isoformat(),
            "last_charge": None if self.last_charge is None else self.last_charge.isoformat(),
        }


def source_of(url: str) -> str:
    """The source a file's rows are stored under: the S3 URL, or the absolute local path."""
    return url if is_s3(url) else str(Path(url.removeprefix("file://")).resolve())


def read_report(url: str, data: bytes) -> tuple[CloudFormat, list[CloudCost]]:
    """Parse a report's bytes (CSV, optionally gzip); errors name the URL, row and column."""
    try:
        if data.startswith(_GZIP_MAGIC):
            data = gzip.decompress(data)
        text = data.decode("utf-8-sig")
    except (OSError, EOFError, zlib.error) as exc:
        raise InvalidInput(f"{url}: not a readable gzip file ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{url}: not UTF-8 text at byte {exc.start}") from exc
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames
        if not header:
            raise InvalidInput(f"{url}: empty file (no header)")
        return parse_cloud_costs(header, reader)
    except csv.Error as exc:
        raise InvalidInput(f"{url}: line {reader.line_num}: not valid CSV ({exc})") from exc
    except InvalidInput as exc:
        if exc.message.startswith(url):
            raise
        raise InvalidInput(f"{url}: {exc.message}") from exc


def require_migrated(db: Database) -> None:
    """``PermanentError`` (one line: run ``finops migrate``) unless every migration is applied."""
    found = db.fetch_one("schema_migrations_present")
    applied = set()
    if found is not None and found["present"]:
        applied = {row["version"] for row in db.fetch_all("schema_migrations_applied")}
    pending = [m for m in available() if m.version not in applied]
    if pending:
        last = pending[-1]
        raise PermanentError(
            f"the database is not migrated ({len(pending)} pending migrations, up to {last.version:03d}_{last.name}): "
            "run `finops migrate` with the same DATABASE_URL first"
        )


def import_cloud_costs(db: Database, url: str, store: ObjectStore) -> CloudImport:
    """Read, parse and store one cloud cost report, replacing an earlier import of the same file."""
    require_migrated(db)
    fmt, costs = read_report(url, store.read_bytes(url))
    source = source_of(url)
    rows = [
        (
            source,
            cost.row,
            fmt.value,
            cost.start,
            cost.end,
            cost.billed_micros,
            cost.effective_micros,
            cost.currency,
            cost.service,
            cost.resource_id,
            cost.account,
            cost.team,
            cost.cost_center,
            json.dumps(dict(cost.tags), sort_keys=True),
            cost.category.value,
            cost.commitment,
        )
        for cost in costs
    ]
    with db.connection() as conn:
        db.execute("lock_cloud_source", conn, source=source)
        replaced = db.execute("delete_cloud_source", conn, source=source)
        db.copy_rows(conn, "cloud_costs", TABLE_COLUMNS, rows)
    return CloudImport(
        source=source,
        format=fmt,
        rows=len(costs),
        replaced=replaced,
        untagged=sum(1 for cost in costs if cost.team is None),
        first_charge=min((cost.start for cost in costs), default=None),
        last_charge=max((cost.end for cost in costs), default=None),
    )


def import_command(db: Database, url: str, *, s3_endpoint: str | None) -> int:
    """``finops import cloud``: import the file, print what was stored (JSON); closes ``db``."""
    try:
        result = import_cloud_costs(db, url, ObjectStore(endpoint_url=s3_endpoint))
    finally:
        db.close()
    print(json.dumps(result.as_document(), indent=2))
    return 0
