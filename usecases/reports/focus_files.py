"""The FOCUS export as files: CSV or Parquet, written row batch by row batch to a binary file.
A table is the cost and usage rows (``finops.focus.FocusExport``) or the Contract Commitment
dataset (``finops.commitments.CommitmentDataset``): both give their columns, their decimal and
date/time columns, and their rows as dicts of strings.

CSV: one header line and the rows, UTF-8, ``\\n`` line ends; a null is an empty field.

Parquet (pyarrow): the columns typed as FOCUS defines them: decimals as ``decimal128(38, 6)``
(costs have two places and quantities six, so every value is stored exactly; a value with more
places would fail the write, never be rounded), date/times as ``timestamp[ms, tz=UTC]`` (Parquet
has no seconds unit), every other column (JSON ones included) as UTF-8 strings; a null is a null.
Rows go out in row groups of ``BATCH`` rows, so the writer holds one batch at a time. pyarrow is
imported by the Parquet writer only (a CSV export, and the command line's start, do without it).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from enum import StrEnum
from itertools import islice
from typing import TYPE_CHECKING, BinaryIO, Protocol

if TYPE_CHECKING:
    import pyarrow as pa


class Table(Protocol):
    @property
    def columns(self) -> tuple[str, ...]: ...
    @property
    def decimals(self) -> frozenset[str]: ...
    @property
    def datetimes(self) -> frozenset[str]: ...
    def rows(self) -> Iterator[dict[str, str]]: ...


BATCH = 4_096  # rows per row group: each batch is held as dicts of strings before it is typed


class FileFormat(StrEnum):
    CSV = "csv"
    PARQUET = "parquet"

    @property
    def content_type(self) -> str:
        return "text/csv; charset=utf-8" if self is FileFormat.CSV else "application/vnd.apache.parquet"


def schema(table: Table) -> pa.Schema:
    import pyarrow as pa

    def kind(name: str) -> pa.DataType:
        if name in table.decimals:
            return pa.decimal128(38, 6)
        return pa.timestamp("ms", tz="UTC") if name in table.datetimes else pa.string()

    return pa.schema([pa.field(name, kind(name)) for name in table.columns])


def write(export: Table, out: BinaryIO, fmt: FileFormat) -> int:
    """Write the table's rows to ``out`` in ``fmt``; returns how many."""
    return write_csv(export, out) if fmt is FileFormat.CSV else write_parquet(export, out)


def write_csv(export: Table, out: BinaryIO) -> int:
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    writer = csv.DictWriter(text, fieldnames=export.columns, lineterminator="\n")
    writer.writeheader()
    count = 0
    for row in export.rows():
        writer.writerow(row)
        count += 1
    text.flush()
    text.detach()  # leave ``out`` open: its owner closes it
    return count


def write_parquet(export: Table, out: BinaryIO) -> int:
    import pyarrow.parquet as pq

    shape = schema(export)
    count = 0
    with pq.ParquetWriter(out, shape) as writer:
        rows = export.rows()
        while batch := tuple(islice(rows, BATCH)):
            writer.write_batch(_batch(batch, shape))
            count += len(batch)
        if not count:
            writer.write_table(shape.empty_table())
    return count


def _batch(rows: tuple[dict[str, str], ...], shape: pa.Schema) -> pa.RecordBatch:
    """The rows (dicts in the schema's column order, as ``FocusExport.rows`` gives them) as typed
    columns: transposed, empty strings made null, then cast."""
    import pyarrow as pa
    import pyarrow.compute as pc

    null = pa.scalar(None, pa.string())
    arrays = []
    for column, values in zip(shape, zip(*(row.values() for row in rows), strict=True), strict=True):
        strings = pa.array(values, pa.string())
        strings = pc.if_else(pc.equal(strings, ""), null, strings)
        arrays.append(strings if column.type == pa.string() else pc.cast(strings, column.type))
    return pa.RecordBatch.from_arrays(arrays, schema=shape)
