"""We test these aspects of writing an hour's rows as ``COPY`` text (``RowBuilder.lines`` into
``infra.postgres.copy_text.copy_lines``, the collector's path) against a real PostgreSQL, with
the rows psycopg adapts value by value (``RowBuilder.stream`` into ``Database.copy_rows``) as the
reference:

- the same answer stores the same table, every column compared as PostgreSQL's text (so a
  numeric's scale counts, not only its value), for tricky numbers (1e-7, 5e-05, a float's
  0.30000000000000004, 1E+30, thirty-digit values, negative adjustments, half-even micros,
  nulls), for text needing escapes (tab, newline, carriage return, backslash, a literal
  ``\\N``, "None"), for NULL places, placeholders, idle, and late namespace labels: streamed
  records against the JSON's exact numbers (``Decimal`` from their text), and the models' dicts
  (the Prometheus source's shape) against the same dicts; a quantity sent as a numeric string is
  read as its number;
- a quantity that is not a number (true, a string, an object) refuses the hour, naming the field;
- a number that is not finite (``"NaN"``, ``"Infinity"`` sent as strings) refuses the hour with
  one line naming the allocation's field, whether a quantity or a cost.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from finops.errors import OpenCostUnavailable
from infra.opencost.models import RESPONSE
from infra.opencost.stream import read_allocations
from infra.postgres import Database
from infra.postgres.copy_text import copy_lines
from usecases.collect_allocations.rows import COLUMNS, RowBuilder

HOUR = datetime(2026, 10, 15, 11, tzinfo=UTC)
TRICKY = [
    "1e-7",
    "5e-05",
    "0.30000000000000004",
    "1E+30",
    "123456789012345678901234567890.123456789",
    "-0.5",
    "0.0000005",
    "0.0000015",
    "-0.0000025",
    "100.10",
    "1.50e1",
    "100e-2",
    "-1.0E+2",
    "0",
    "-0",
    "null",
]
HUGE = ("1E+30", "123456789012345678901234567890.123456789")  # quantities only: too large for micros
QUANTITIES = ("minutes", "cpuCores", "cpuCoreHours", "ramBytes", "ramByteUsageAverage", "pvByteHours")
COSTS = ("cpuCost", "ramCost", "gpuCost", "pvCost", "networkCost", "loadBalancerCost", "sharedCost", "totalCost")
ADJUSTMENTS = ("cpuCostAdjustment", "ramCostAdjustment", "pvCostAdjustment", "networkCostAdjustment")
NAMES = ["plain", "tab\there", "line\nbreak", "carriage\rreturn", "back\\slash", "literal \\N", "None"]


def body(numbers: list[str] | None = None) -> bytes:
    """An answer whose allocations cycle through the tricky numbers and names, as raw JSON (the
    numbers written exactly as given, not through a float)."""
    numbers = numbers or TRICKY
    entries = []
    for i in range(40):
        namespace = ["shop", "", "__unallocated__", "batch"][i % 4]
        name = f"{namespace}/{NAMES[i % len(NAMES)]}-{i}" if i else "__idle__"
        props: dict[str, Any] = {"namespace": namespace, "pod": None if i % 5 == 0 else f"pod\t{i}"}
        if i % 3 == 0:
            props["container"] = NAMES[i % len(NAMES)]
        if namespace and i > 8:  # labels arrive after the namespace's first rows
            props["namespaceLabels"] = {"team": f"team\\{i % 2}", "cost-center": "cc\t1"}
        fields = [f'"name":{json.dumps(name)}', f'"properties":{json.dumps(props)}']
        fields += ['"start":"2026-10-15T11:00:00Z"', '"end":"2026-10-15T11:59:59.5+02:00"' if i % 2 else '"end":null']
        for j, field in enumerate(QUANTITIES + COSTS + ADJUSTMENTS):
            choices = numbers if field in QUANTITIES else [n for n in numbers if n not in HUGE]
            fields.append(f'"{field}":{choices[(i + j) % len(choices)]}')
        if i % 3 == 0:  # OpenCost's GPU figures: tricky numbers and names too
            request, usage = numbers[i % len(numbers)], numbers[(i + 1) % len(numbers)]
            shared, device = json.dumps(i % 2 == 0), json.dumps(NAMES[i % len(NAMES)])
            gpu = (
                f'"gpuRequestAverage":{request},"gpuUsageAverage":{usage},"isGPUShared":{shared},'
                f'"gpuDevice":{device},"gpuModel":"NVIDIA L4","gpuUUID":"GPU-{i}"'
            )
            fields.append(f'"gpuAllocation":{{{gpu}}}')
        elif i % 3 == 1:
            fields.append('"gpuAllocation":null')
        entries.append(f"{json.dumps(name)}:{{{','.join(fields)}}}")
    return f'{{"code":200,"status":"success","data":[{{{",".join(entries)}}}]}}'.encode()


def builder(cluster: str) -> RowBuilder:
    return RowBuilder(
        cluster=cluster,
        aggregation="namespace,\tpod\\x",  # fixed for the hour, formatted once: escaped too
        hour=HOUR,
        finalized=True,
        pricebook_id=None,
        currency="EUR",
        owner_label_key="team",
        cost_center_label_key="cost-center",
        collected_at=HOUR,
        source="opencost",
    )


def streamed(answer: bytes) -> Iterator[tuple[str, Any]]:
    return read_allocations(io.BytesIO(answer), "OpenCost at http://opencost answered /allocation", window=700)


def exact(answer: bytes) -> Iterator[tuple[str, Any]]:
    """The reference: every number of the JSON as an exact ``Decimal`` of its text (what the
    streamed records held before their quantities were kept as text), in plain dicts."""
    return iter(json.loads(answer, parse_float=Decimal)["data"][0].items())


def modelled(answer: bytes) -> Iterator[tuple[str, Any]]:
    parsed = RESPONSE.validate_json(answer)
    return iter((parsed["data"] or [{}])[0].items())  # type: ignore[union-attr]


def table(db: Database, cluster: str) -> list[tuple[str | None, ...]]:
    columns = ", ".join(f"{c}::text" for c in COLUMNS if c != "cluster")
    with db.connection() as conn:
        rows = conn.execute(
            f"SELECT {columns} FROM provider_allocations WHERE cluster = %(c)s ORDER BY name", {"c": cluster}
        ).fetchall()
    return [tuple(row.values()) for row in rows]


@pytest.mark.parametrize(("origin", "source"), [(exact, streamed), (modelled, modelled)], ids=["streamed", "models"])
def test_the_text_lines_store_what_the_adapted_rows_store(db: Database, origin: Any, source: Any) -> None:
    answer = body()
    db.execute("ensure_allocation_partition", hour=HOUR)
    with db.connection() as conn:
        reference, ours = builder("reference"), builder("lines")
        assert db.copy_rows(conn, "provider_allocations", COLUMNS, reference.stream(origin(answer))) == 40
        assert copy_lines(conn, "provider_allocations", COLUMNS, ours.lines(source(answer))) == 40
    expected, got = table(db, "reference"), table(db, "lines")
    assert len(expected) == 40 and got == expected
    assert ours.late_owners() == reference.late_owners() != {}
    stored = {value for row in got for value in row}
    # The tricky values did reach the table (the comparison is not of empty or NULL columns).
    assert {"0.0000001", "0.00005", "0.30000000000000004", "1000000000000000000000000000000"} <= stored
    assert {"namespace,\tpod\\x", "literal \\N", "None", "cc\t1", "team\\1", "pod\t1"} <= stored
    assert {"/tab\there-1", "__unallocated__/line\nbreak-2", "batch/carriage\rreturn-3", "shop/back\\slash-4"} <= stored
    assert {"GPU-0", "GPU-3", "NVIDIA L4", "true", "false", "line\nbreak"} <= stored  # the GPU columns too


def test_a_quantity_sent_as_a_numeric_string_is_read_as_its_number(db: Database) -> None:
    answer = body().replace(b'"cpuCores":', b'"cpuCores":"0.50","ignored":', 1)
    db.execute("ensure_allocation_partition", hour=HOUR)
    with db.connection() as conn:
        db.copy_rows(conn, "provider_allocations", COLUMNS, builder("reference").stream(exact(answer)))
        copy_lines(conn, "provider_allocations", COLUMNS, builder("lines").lines(streamed(answer)))
    assert table(db, "lines") == table(db, "reference")
    idle = next(row for row in table(db, "lines") if row[COLUMNS.index("name") - 1] == "__idle__")
    assert idle[COLUMNS.index("cpu_cores") - 1] == "0.50"


@pytest.mark.parametrize("bad", ['"NaN"', '"Infinity"', '"-Infinity"', '"sNaN"'])
@pytest.mark.parametrize("field", ["cpuCores", "ramCost", "cpuCostAdjustment", "gpuAllocation.gpuUsageAverage"])
def test_a_number_that_is_not_finite_refuses_the_hour_naming_its_field(bad: str, field: str) -> None:
    key = field.rpartition(".")[2]
    answer = body().replace(f'"{key}":'.encode(), f'"{key}":{bad},"ignored":'.encode(), 1)
    with pytest.raises(OpenCostUnavailable) as refused:
        list(builder("c").lines(streamed(answer)))
    assert f"__idle__.{field}: " in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("bad", ["true", '"lots"', "{}", "[1]"])
def test_a_quantity_that_is_not_a_number_refuses_the_hour_naming_its_field(bad: str) -> None:
    answer = body().replace(b'"ramBytes":', f'"ramBytes":{bad},"ignored":'.encode(), 1)
    with pytest.raises(OpenCostUnavailable, match=r"^OpenCost answered /allocation with __idle__\.ramBytes: [^\n]+$"):
        list(builder("c").lines(streamed(answer)))
