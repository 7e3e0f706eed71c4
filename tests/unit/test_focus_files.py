"""We test these aspects of writing the FOCUS export as a file (``usecases.reports.focus_files``):

- Parquet is written in row groups of ``BATCH`` rows (the writer holds one batch at a time), and
  holds the CSV's rows typed: decimals exact, timestamps in UTC, nulls as nulls, strings as is;
- an empty month is a Parquet file with the version's columns and no rows, and a CSV of the
  header alone.
"""

from __future__ import annotations

import csv
import io
import math
from datetime import datetime
from decimal import Decimal

import pyarrow.parquet as pq
import pytest

from finops.focus import build_focus
from finops.focus_rows import DATETIMES, DECIMALS, FocusVersion
from finops.policy import parse_policy
from tests.unit.test_focus import EXAMPLE, NOVEMBER, policy
from usecases.reports import focus_files
from usecases.reports.focus_files import FileFormat


def typed(column: str, text: str) -> object:
    if not text:
        return None
    if column in DECIMALS:
        return Decimal(text)
    return datetime.fromisoformat(text) if column in DATETIMES else text


@pytest.mark.parametrize("version", list(FocusVersion))
def test_parquet_is_the_csv_typed_in_row_groups(version: FocusVersion, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(focus_files, "BATCH", 50)
    export = build_focus(EXAMPLE, policy(), period=NOVEMBER, version=version)
    text, data = io.BytesIO(), io.BytesIO()
    assert focus_files.write(export, text, FileFormat.CSV) == focus_files.write(export, data, FileFormat.PARQUET)
    rows = list(csv.DictReader(io.StringIO(text.getvalue().decode())))
    parquet = pq.ParquetFile(io.BytesIO(data.getvalue()))
    assert parquet.metadata.num_row_groups == math.ceil(len(rows) / 50) > 1
    table = parquet.read()
    assert table.schema.names == list(export.columns)
    assert table.to_pylist() == [{c: typed(c, row[c]) for c in export.columns} for row in rows]


def test_an_empty_month() -> None:
    export = build_focus([], parse_policy({"currency": "EUR"}), period=NOVEMBER)
    text, data = io.BytesIO(), io.BytesIO()
    assert focus_files.write(export, text, FileFormat.CSV) == focus_files.write(export, data, FileFormat.PARQUET) == 0
    assert text.getvalue().decode() == ",".join(export.columns) + "\n"
    table = pq.read_table(io.BytesIO(data.getvalue()))
    assert (table.schema.names, table.num_rows) == (list(export.columns), 0)
