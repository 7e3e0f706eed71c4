"""We test these aspects of turning OpenCost allocations into ``provider_allocations`` rows
(``usecases.collect_allocations.rows.RowBuilder``), with hand-made allocations:

- every per-resource cost column is the cost *plus its adjustment* (OpenCost's ``*CostAdjustment``,
  positive or negative), in exact integer micros; an unmeasured cost stays unknown, and
  ``totalCost`` is stored as sent (it already includes the adjustments);
- the collector's own path (``RowBuilder.lines`` over streamed records) writes the same micros as
  the rows: nothing spent is 0, not unknown; an adjustment of nothing spent counts; the largest
  cost a bigint holds is stored to the micro, and a larger one refuses the hour, naming the
  allocation's field; whole-number costs (JSON integers) give the same micros;
- ownership comes from the namespace's labels only: a pod's own labels never decide the team or
  cost centre, and an entry without namespace labels (an unmounted volume) takes those of its
  namespace's other entries in the same hour.
"""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finops.errors import InvalidInput, OpenCostUnavailable
from infra.opencost import Allocation
from infra.opencost.stream import QUANTITIES, read_allocations
from infra.postgres.copy_text import escaped, unescaped
from usecases.collect_allocations.rows import COLUMNS, RowBuilder

HOUR = datetime(2026, 10, 15, 11, tzinfo=UTC)
COST_COLUMNS = {
    "cpu_cost_micros": ("cpuCost", "cpuCostAdjustment"),
    "gpu_cost_micros": ("gpuCost", "gpuCostAdjustment"),
    "ram_cost_micros": ("ramCost", "ramCostAdjustment"),
    "pv_cost_micros": ("pvCost", "pvCostAdjustment"),
    "network_cost_micros": ("networkCost", "networkCostAdjustment"),
    "lb_cost_micros": ("loadBalancerCost", "loadBalancerCostAdjustment"),
}


def builder() -> RowBuilder:
    return RowBuilder(
        cluster="c",
        aggregation="namespace,controllerKind,controller,pod,container",
        hour=HOUR,
        finalized=True,
        pricebook_id=7,
        currency="EUR",
        owner_label_key="team",
        cost_center_label_key="cost-center",
        collected_at=HOUR,
    )


def allocation(
    name: str,
    namespace: str,
    *,
    labels: dict[str, str] | None = None,
    namespace_labels: dict[str, str] | None = None,
    figures: dict[str, Decimal | None] | None = None,
) -> Allocation:
    properties: dict[str, Any] = {"namespace": namespace, "pod": name.split("/")[-2], "container": "app"}
    if labels is not None:
        properties["labels"] = labels
    if namespace_labels is not None:
        properties["namespaceLabels"] = namespace_labels
    return {"name": name, "properties": properties, **(figures or {})}  # type: ignore[typeddict-item]


def stored(*allocations: Allocation) -> dict[str, dict[str, Any]]:
    """The rows RowBuilder makes, by name, as column -> value."""
    rows = builder().rows({a["name"]: a for a in allocations})
    return {row[COLUMNS.index("name")]: dict(zip(COLUMNS, row, strict=True)) for row in rows}


# -- adjustments ---------------------------------------------------------------------------------

# Six resources, each with its own cost and an adjustment of its own size and sign, so a column
# reading another resource's figures, or dropping or subtracting its adjustment, shows.
FIGURES: dict[str, Decimal | None] = {
    "cpuCost": Decimal("0.04741"),
    "cpuCostAdjustment": Decimal("-0.00474"),
    "gpuCost": Decimal("0.95"),
    "gpuCostAdjustment": Decimal("-0.19"),
    "ramCost": Decimal("0.01695"),
    "ramCostAdjustment": Decimal("0.00085"),
    "pvCost": Decimal("0.00014"),
    "pvCostAdjustment": Decimal("0.00003"),
    "networkCost": Decimal("0.01"),
    "networkCostAdjustment": Decimal("-0.005"),
    "loadBalancerCost": Decimal("0.025"),
    "loadBalancerCostAdjustment": Decimal("0.005"),
    "sharedCost": Decimal("0.5"),
    "externalCost": Decimal("0.25"),
    "totalCost": Decimal("1.79609"),
}
# cost + adjustment, in micros, by hand: 0.04741 - 0.00474 = 0.04267 ...
EXPECTED = {
    "cpu_cost_micros": 42_670,  # 47_410 - 4_740
    "gpu_cost_micros": 760_000,  # 950_000 - 190_000
    "ram_cost_micros": 17_800,  # 16_950 + 850
    "pv_cost_micros": 170,  # 140 + 30
    "network_cost_micros": 5_000,  # 10_000 - 5_000
    "lb_cost_micros": 30_000,  # 25_000 + 5_000
}


def test_every_cost_column_includes_its_adjustment() -> None:
    row = stored(allocation("shop/deployment/web/web-1/app", "shop", figures=FIGURES))["shop/deployment/web/web-1/app"]
    assert {column: row[column] for column in EXPECTED} == EXPECTED
    # Shared and external costs have no adjustment; totalCost is OpenCost's, already adjusted.
    assert (row["shared_cost_micros"], row["external_cost_micros"]) == (500_000, 250_000)
    assert row["total_cost_micros"] == 1_796_090
    assert row["gpu_adjustment_micros"] == -190_000  # kept apart too: the GPU split keeps it on the row


@pytest.mark.parametrize(("column", "fields"), list(COST_COLUMNS.items()), ids=list(COST_COLUMNS))
@pytest.mark.parametrize(
    ("cost", "adjustment", "micros"),
    [
        (Decimal("2.5"), Decimal("0.125"), 2_625_000),
        (Decimal("2.5"), Decimal("-0.125"), 2_375_000),
        (Decimal("2.5"), Decimal("-2.5"), 0),  # a full credit
        (Decimal("2.5"), None, 2_500_000),  # OpenCost without the field: no adjustment
        (Decimal("0.0000005"), Decimal("0.000001"), 2),  # 1.5 micros: half-even, once, on the sum
        (None, Decimal("0.125"), None),  # an unmeasured cost stays unknown, never "the adjustment"
    ],
    ids=["surcharge", "credit", "full-credit", "no-adjustment", "rounded-once", "unmeasured"],
)
def test_one_cost_column(
    column: str, fields: tuple[str, str], cost: Decimal | None, adjustment: Decimal | None, micros: int | None
) -> None:
    cost_field, adjustment_field = fields
    figures = {cost_field: cost, adjustment_field: adjustment}
    (row,) = stored(allocation("shop/deployment/web/web-1/app", "shop", figures=figures)).values()
    assert row[column] == micros
    others = [c for c in COST_COLUMNS if c != column]
    assert all(row[c] is None for c in others)  # nothing leaks into another resource's column


def written(figures: dict[str, str]) -> dict[str, int | None]:
    """The cost columns of the line the collector writes (``RowBuilder.lines`` of a streamed
    record) for one allocation whose figures are ``figures``, each as its JSON text."""
    fields = "".join(f',"{field}":{text}' for field, text in figures.items())
    (line,) = builder().lines(streamed(f'"shop/web":{{"name":"shop/web","properties":{{"namespace":"shop"}}{fields}}}'))
    row = columns(line)
    return {c: None if row[c] == "\\N" else int(row[c]) for c in (*COST_COLUMNS, "total_cost_micros")}


def columns(line: str) -> dict[str, str]:
    """A line of ``COPY``'s text format, column -> its text as written."""
    return dict(zip(COLUMNS, line.rstrip("\n").split("\t"), strict=True))


@pytest.mark.parametrize(
    ("cost", "adjustment", "micros"),
    [
        ("0", "0.125", 125_000),  # nothing spent, then adjusted: the adjustment counts
        ("0", None, 0),  # nothing spent: zero, not unknown
        ("0", "0", 0),
        ("0.000", "-0.0000015", -2),  # half-even, negative
        ("null", "0.125", None),  # unmeasured stays unknown, even adjusted
        ("null", None, None),
        ("2.5", "-0.125", 2_375_000),
        ("9223372036854.775807", None, 2**63 - 1),  # the largest cost a bigint holds, to the micro
        ("-9223372036854.775807", None, -(2**63) + 1),
    ],
)
@pytest.mark.parametrize("path", ["rows", "lines"])
def test_a_cost_column_in_both_paths(path: str, cost: str, adjustment: str | None, micros: int | None) -> None:
    figures = {"cpuCost": cost, **({"cpuCostAdjustment": adjustment} if adjustment is not None else {})}
    if path == "lines":
        row: dict[str, Any] = written(figures)
    else:
        exact = {f: None if t == "null" else Decimal(t) for f, t in figures.items()}
        (row,) = stored(allocation("shop/web", "shop", figures=exact)).values()
    assert row["cpu_cost_micros"] == micros
    assert all(row[c] is None for c in COST_COLUMNS if c != "cpu_cost_micros")


@pytest.mark.parametrize(
    ("cost", "adjustment", "micros"),
    [(3, None, 3_000_000), (3, 1, 4_000_000), (0, 2, 2_000_000), (3, Decimal("-0.5"), 2_500_000)],
)
def test_whole_numbers_are_costs_too(cost: int, adjustment: int | Decimal | None, micros: int) -> None:
    """A cost given as an ``int`` (a JSON integer kept as one): the same micros."""
    (row,) = stored(allocation("shop/web", "shop", figures={"ramCost": cost, "ramCostAdjustment": adjustment})).values()  # type: ignore[dict-item]
    assert row["ram_cost_micros"] == micros


@pytest.mark.parametrize("field", ["cpuCost", "totalCost", "sharedCost"])
@pytest.mark.parametrize("text", ["9223372036854.775808", "-1E+13"])
def test_a_cost_too_large_to_store_refuses_the_hour_naming_its_field(field: str, text: str) -> None:
    refusal = (
        rf"^OpenCost answered /allocation with shop/web\.{field}: {re.escape(text)}, too large to store in micros$"
    )
    with pytest.raises(OpenCostUnavailable, match=refusal):
        written({field: text})
    with pytest.raises(InvalidInput, match="too large to store in micros"):
        stored(allocation("shop/web", "shop", figures={field: Decimal(text)}))


# -- ownership -----------------------------------------------------------------------------------


def test_namespace_labels_decide_the_owner_not_pod_labels() -> None:
    rows = stored(
        allocation(
            "shop/deployment/web/web-1/app",
            "shop",
            labels={"team": "a", "cost_center": "cc-a"},
            namespace_labels={"team": "b", "cost_center": "cc-b"},
        ),
    )
    (row,) = rows.values()
    assert (row["namespace"], row["team"], row["cost_center"]) == ("shop", "b", "cc-b")


def test_pod_labels_alone_give_no_owner() -> None:
    rows = stored(allocation("shop/deployment/web/web-1/app", "shop", labels={"team": "a", "cost-center": "cc-a"}))
    (row,) = rows.values()
    assert (row["team"], row["cost_center"]) == (None, None)


def test_a_namespace_without_the_owner_label_has_no_owner() -> None:
    rows = stored(
        allocation(
            "legacy/__unallocated__/__unallocated__/debug/shell",
            "legacy",
            labels={"team": "a"},
            namespace_labels={"kubernetes_io_metadata_name": "legacy"},
        )
    )
    (row,) = rows.values()
    assert (row["team"], row["cost_center"]) == (None, None)


def test_an_unmounted_volume_takes_its_namespaces_labels_from_the_hours_other_entries() -> None:
    unmounted = "search/__unallocated__/__unallocated__/search-unmounted-pvcs/__unmounted__"
    orphan = "lonely/__unallocated__/__unallocated__/lonely-unmounted-pvcs/__unmounted__"
    rows = stored(
        allocation(unmounted, "search", figures={"pvCost": Decimal("0.00274")}),  # OpenCost sends it without labels
        allocation(
            "search/statefulset/index/index-0/engine",
            "search",
            labels={"team": "pod-says"},
            namespace_labels={"team": "discovery", "cost_center": "cc-200"},
        ),
        allocation("shop/deployment/web/web-1/app", "shop", namespace_labels={"team": "checkout"}),
        allocation(orphan, "lonely", labels={"team": "pod-says"}),  # nothing else in its namespace
    )
    assert (rows[unmounted]["entry_kind"], rows[unmounted]["team"], rows[unmounted]["cost_center"]) == (
        "unmounted",
        "discovery",
        "cc-200",
    )
    assert rows["search/statefulset/index/index-0/engine"]["team"] == "discovery"
    assert (rows["shop/deployment/web/web-1/app"]["team"], rows["shop/deployment/web/web-1/app"]["cost_center"]) == (
        "checkout",
        None,
    )
    assert (rows[orphan]["team"], rows[orphan]["cost_center"]) == (None, None)


def test_idle_has_no_namespace_and_no_owner() -> None:
    idle: Allocation = {"name": "__idle__", "properties": {"cluster": "c"}, "cpuCost": Decimal("0.09")}
    rows = builder().rows(
        {"__idle__": idle, "x": allocation("shop/d/web/web-1/app", "shop", namespace_labels={"team": "checkout"})}
    )
    row = dict(zip(COLUMNS, next(iter(rows)), strict=True))
    assert (row["namespace"], row["entry_kind"], row["team"], row["cpu_cost_micros"]) == ("", "idle", None, 90_000)


def test_a_namespace_placeholder_is_stored_as_no_namespace() -> None:
    # OpenCost's __unallocated__/__idle__/__unmounted__ in the namespace property: '' (no namespace).
    for sentinel in ("__unallocated__", "__idle__", "__unmounted__"):
        (row,) = stored(allocation(f"{sentinel}/x/y/z/w", sentinel, namespace_labels={"team": "t"})).values()
        assert (row["namespace"], row["team"]) == ("", None)


def test_an_entry_without_namespace_labels_takes_them_whatever_its_position_in_the_hour() -> None:
    # Ownership: an unlabelled entry listed after its namespace's labelled one does not erase its owner.
    unmounted = "search/__unallocated__/__unallocated__/search-unmounted-pvcs/__unmounted__"
    rows = stored(
        allocation(
            "search/statefulset/index/index-0/engine",
            "search",
            namespace_labels={"team": "discovery", "cost_center": "cc-200"},
        ),
        allocation(unmounted, "search"),
    )
    assert {(row["team"], row["cost_center"]) for row in rows.values()} == {("discovery", "cc-200")}


def test_one_namespace_has_one_owner_in_an_hour_its_first_labelled_entry() -> None:
    # Ownership: should entries of one namespace carry different namespace labels in one hour (relabelled
    # meanwhile), every entry of the namespace is charged to the same owner, the first labelled entry's.
    rows = stored(
        allocation("shop/deployment/web/web-1/app", "shop", namespace_labels={"team": "old", "cost_center": "cc-1"}),
        allocation("shop/deployment/api/api-1/app", "shop", namespace_labels={"team": "new", "cost_center": "cc-2"}),
    )
    assert {(row["team"], row["cost_center"]) for row in rows.values()} == {("old", "cc-1")}


# -- every column --------------------------------------------------------------------------------


def test_every_column_comes_from_its_own_field() -> None:
    # Usage quantities (cores, bytes, hours) are what usage charges are priced from: each column must
    # read its own OpenCost field. Every figure differs, so a column reading another field shows.
    collected = datetime(2026, 10, 15, 12, 7, tzinfo=UTC)
    start, end = datetime(2026, 10, 15, 11, 5, tzinfo=UTC), datetime(2026, 10, 15, 11, 55, tzinfo=UTC)
    properties: dict[str, Any] = {
        "namespace": "shop",
        "controllerKind": "deployment",
        "controller": "web",
        "pod": "web-1",
        "container": "app",
        "node": "node-a",
        "namespaceLabels": {"team": "checkout", "cost-center": "cc-7"},
    }
    figures: dict[str, Any] = {
        "start": start,
        "end": end,
        "minutes": Decimal(50),
        "cpuCores": Decimal("1.5"),
        "cpuCoreRequestAverage": Decimal("1.25"),
        "cpuCoreUsageAverage": Decimal("0.75"),
        "cpuCoreHours": Decimal("1.125"),
        "ramBytes": Decimal(4096),
        "ramByteRequestAverage": Decimal(2048),
        "ramByteUsageAverage": Decimal(1024),
        "ramByteHours": Decimal(3072),
        "gpuCount": Decimal(2),
        "gpuHours": Decimal("1.5"),
        "pvBytes": Decimal(8192),
        "pvByteHours": Decimal(6144),
        "networkTransferBytes": Decimal(512),
        "networkReceiveBytes": Decimal(256),
        "gpuAllocation": {
            "gpuRequestAverage": Decimal("0.5"),
            "gpuUsageAverage": Decimal("0.125"),
            "isGPUShared": True,
            "gpuDevice": "nvidia0",
            "gpuModel": "NVIDIA L4",
            "gpuUUID": "GPU-5f2a",
            "gpuSharing": "mig",
            "gpuProfile": "1g.10gb",
        },
    }
    # The key differs from the name: the row is named after the allocation's own name.
    entry: Allocation = {"name": "shop/deployment/web/web-1/app", "properties": properties, **figures}  # type: ignore[typeddict-item]
    builder = RowBuilder(
        cluster="east",
        aggregation="namespace,pod",
        hour=HOUR,
        finalized=True,
        pricebook_id=7,
        currency="EUR",
        owner_label_key="team",
        cost_center_label_key="cost-center",
        collected_at=collected,
    )
    (row,) = (dict(zip(COLUMNS, r, strict=True)) for r in builder.rows({"the-key": entry}))
    assert row == {
        "cluster": "east",
        "namespace": "shop",
        "name": "shop/deployment/web/web-1/app",
        "aggregation": "namespace,pod",
        "hour": HOUR,
        "entry_kind": "workload",
        "controller_kind": "deployment",
        "controller": "web",
        "pod": "web-1",
        "container": "app",
        "node": "node-a",
        "data_start": start,
        "data_end": end,
        "minutes": Decimal(50),
        "cpu_cores": Decimal("1.5"),
        "cpu_core_request_avg": Decimal("1.25"),
        "cpu_core_usage_avg": Decimal("0.75"),
        "cpu_core_hours": Decimal("1.125"),
        "ram_bytes": Decimal(4096),
        "ram_byte_request_avg": Decimal(2048),
        "ram_byte_usage_avg": Decimal(1024),
        "ram_byte_hours": Decimal(3072),
        "gpu_count": Decimal(2),
        "gpu_hours": Decimal("1.5"),
        "pv_bytes": Decimal(8192),
        "pv_byte_hours": Decimal(6144),
        "network_transfer_bytes": Decimal(512),
        "network_receive_bytes": Decimal(256),
        "cpu_cost_micros": None,
        "gpu_cost_micros": None,
        "ram_cost_micros": None,
        "pv_cost_micros": None,
        "network_cost_micros": None,
        "lb_cost_micros": None,
        "shared_cost_micros": None,
        "external_cost_micros": None,
        "total_cost_micros": None,
        "team": "checkout",
        "cost_center": "cc-7",
        "pricebook_id": 7,
        "currency": "EUR",
        "is_finalized": True,
        "collected_at": collected,
        "source": "opencost",  # the builder's default: OpenCost's allocation API
        "gpu_request_avg": Decimal("0.5"),
        "gpu_usage_avg": Decimal("0.125"),
        "gpu_shared": True,
        "gpu_device": "nvidia0",
        "gpu_model": "NVIDIA L4",
        "gpu_uuid": "GPU-5f2a",
        "gpu_sharing": "mig",
        "gpu_profile": "1g.10gb",
        "gpu_adjustment_micros": None,
        "gpu_busy_hours": None,  # the GPU split's
    }
    # Without a name, the row is named after its key.
    del entry["name"]
    (unnamed,) = builder.rows({"shop/deployment/web/web-1/app": entry})
    assert unnamed[COLUMNS.index("name")] == "shop/deployment/web/web-1/app"


# -- the collector's lines -----------------------------------------------------------------------


def as_copied(value: Any) -> str:
    """A row's value as ``COPY``'s text format writes it."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    return str(value).translate(str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}))


@pytest.mark.parametrize("pod", ["web-1", "web\t1\\N"], ids=["plain", "escaped"])
@pytest.mark.parametrize("start", ["2026-10-15T11:05:00Z", None])
@pytest.mark.parametrize(
    "fixed",
    [
        {"finalized": True, "pricebook_id": 7, "currency": "EUR", "source": "opencost"},
        {"finalized": False, "pricebook_id": None, "currency": None, "source": "prometheus"},
    ],
    ids=["final-priced", "open-unpriced"],
)
def test_the_collectors_line_holds_what_the_row_holds_column_by_column(
    fixed: dict[str, Any], start: str | None, pod: str
) -> None:
    """``lines`` (the collector's path, over streamed records) against ``rows`` (every column
    checked by hand above) for an allocation whose every field differs: with plain text (the line
    most rows take) and with a pod name to escape (the line rebuilt with escapes)."""
    props = {
        "namespace": "shop",
        "controllerKind": "deployment",
        "controller": "web",
        "pod": pod,
        "container": "app",
        "node": "node-a",
        "namespaceLabels": {"team": "checkout", "cost-center": "cc-7"},
    }
    figures = {f: str(Decimal(n + 1) / 8) for n, f in enumerate(QUANTITIES)} | {f: str(v) for f, v in FIGURES.items()}
    times = {"start": start, "end": "2026-10-15T11:55:00Z"}
    entry = {"name": "shop/deployment/web/web-1/app", "properties": props, **times}
    numbers = "".join(f',"{field}":{text}' for field, text in figures.items())  # JSON numbers, as written
    kwargs = dict(
        cluster="east",
        aggregation="namespace,pod",
        hour=HOUR,
        owner_label_key="team",
        cost_center_label_key="cost-center",
        collected_at=datetime(2026, 10, 15, 12, 7, tzinfo=UTC),
        **fixed,
    )
    (line,) = RowBuilder(**kwargs).lines(streamed(f'"the-key":{json.dumps(entry)[:-1]}{numbers}}}'))
    parsed = {f: None if v is None else Decimal(v) for f, v in figures.items()}
    times_parsed = {k: None if v is None else datetime.fromisoformat(v) for k, v in times.items()}
    (row,) = RowBuilder(**kwargs).rows({"the-key": {**entry, **times_parsed, **parsed}})  # type: ignore[dict-item]
    assert columns(line) == {c: as_copied(v) for c, v in zip(COLUMNS, row, strict=True)}


def streamed(*entries: str) -> Any:
    """Streamed records of an answer whose allocations are ``entries`` (each ``"key":{...}``)."""
    answer = f'{{"code":200,"data":[{{{",".join(entries)}}}]}}'
    return read_allocations(io.BytesIO(answer.encode()), "OpenCost", window=700)


def test_late_owners_are_the_namespaces_written_before_their_labels_that_got_some() -> None:
    labels = '"namespaceLabels":{"team":"checkout","cost-center":"cc-7"}'
    b = builder()
    lines = list(
        b.lines(
            streamed(
                '"shop/a":{"name":"shop/a","properties":{"namespace":"shop"}}',  # before its labels
                '"batch/b":{"name":"batch/b","properties":{"namespace":"batch"}}',  # never labelled
                '"__idle__":{"name":"__idle__","properties":{"namespace":"__idle__"}}',
                f'"shop/c":{{"name":"shop/c","properties":{{"namespace":"shop",{labels}}}}}',
                '"shop/e":{"name":"shop/e","properties":{"namespace":"shop","namespaceLabels":{"team":"x"}}}',
                f'"web/d":{{"name":"web/d","properties":{{"namespace":"web",{labels}}}}}',  # labelled first
            )
        )
    )
    team = [columns(line)["team"] for line in lines]
    assert team == ["\\N", "\\N", "\\N", "checkout", "checkout", "checkout"]  # shop/e's own labels lose
    assert b.late_owners() == {"shop": ("checkout", "cc-7")}


@pytest.mark.parametrize("field", ["minutes", "cpuCores", "networkReceiveBytes", "cpuCost", "totalCost"])
@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity"])
def test_a_dict_allocation_with_a_number_that_is_not_finite_refuses_the_hour_naming_its_field(
    field: str, bad: str
) -> None:
    """The Prometheus source's allocations are dicts: the same refusal as a streamed answer's."""
    entry = allocation("shop/web", "shop", figures={"cpuCost": Decimal("0.5"), field: Decimal(bad)})
    with pytest.raises(OpenCostUnavailable, match=rf"^OpenCost answered /allocation with shop/web\.{field}: {bad}, "):
        list(builder().lines(iter([("shop/web", entry)])))


def test_a_cost_too_large_is_named_not_an_earlier_cost_near_the_limit() -> None:
    near = "9223372036854.7758074"  # rounds to the largest a bigint of micros holds: not the culprit
    with pytest.raises(OpenCostUnavailable, match=r"shop/web\.totalCost: 1E\+13, too large"):
        written({"cpuCost": near, "ramCost": "1E+12", "totalCost": "1E+13"})


def test_an_adjustment_that_takes_a_cost_past_the_limit_refuses_the_hour() -> None:
    with pytest.raises(OpenCostUnavailable, match=r"^OpenCost answered /allocation with shop/web: a cost too large"):
        written({"cpuCost": "9223372036854.775807", "cpuCostAdjustment": "0.000001"})
    with pytest.raises(InvalidInput, match="too large to store in micros"):
        stored(
            allocation(
                "shop/web",
                "shop",
                figures={"cpuCost": Decimal("9223372036854.775807"), "cpuCostAdjustment": Decimal("0.000001")},
            )
        )


@given(st.text(alphabet=st.sampled_from("ab\\\t\n\rN")))
def test_a_text_field_reads_back_as_it_was_written(text: str) -> None:
    # the GPU split reads its held rows' names and GPUs back from their lines
    field = escaped(text)
    assert "\t" not in field and "\n" not in field and "\r" not in field
    assert unescaped(field) == text
