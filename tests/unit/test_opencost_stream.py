"""We test these aspects of reading an ``/allocation`` answer in bounded windows
(``infra.opencost.stream``), against the whole-body pydantic parse as the reference:

- every allocation arrives, equal to the reference (exact decimals, times, properties), whatever
  the window size (down to windows smaller than one allocation), with the answer compact or
  pretty-printed, and with ``},"x":{`` inside strings and nested objects that look like cuts;
- a number arrives as the exact ``Decimal`` of its text, however many digits (not through a
  float), a quantity's text keeping its scale;
- a bad field fails with one line naming the allocation's field, wherever it lies in the answer;
- an error envelope (``code`` other than 200) fails with OpenCost's message; two step sets for
  one accumulated hour are refused; a large answer must give its ``code`` before ``data``;
- ``"null"`` strings as times read as None; ``data: [{}]``, ``[null]`` and ``[]`` are empty.
"""

from __future__ import annotations

import io
import json
from decimal import Decimal
from typing import Any

import pytest

from finops.errors import OpenCostUnavailable
from infra.opencost.models import RESPONSE
from infra.opencost.stream import QUANTITIES, _Allocation, _Properties, quantities_text, read_allocations
from usecases.collect_allocations import rows


def quantities_of(record: Any, name: str) -> tuple[Decimal | None, ...]:
    """A streamed record's ``QUANTITIES`` as exact Decimals: what ``quantities_text`` writes, read back."""
    return tuple(None if text == "\\N" else Decimal(text) for text in quantities_text(record, name).split("\t"))


ORIGIN = "OpenCost at http://opencost answered /allocation"


def allocation(i: int) -> dict[str, Any]:
    namespace = f"ns-{i % 3}"
    return {
        "name": f"{namespace}/pod-{i}/app",
        "properties": {
            "cluster": "c",
            "namespace": namespace,
            "pod": f"pod-{i}",
            "container": "app",
            # Strings and nested objects that look like an allocation boundary.
            "annotations": {"note": 'tricky "},"x":{"name":"y"} text', "k": "}"},
            "labels": {"app": f"a{i}"},
            "namespaceLabels": {"team": f"t{i % 3}"},
        },
        "window": {"start": "2026-01-05T10:00:00Z", "end": "2026-01-05T11:00:00Z"},
        "start": "2026-01-05T10:00:00Z",
        "end": "null" if i == 7 else "2026-01-05T11:00:00Z",
        "minutes": 60,
        "cpuCost": 0.12345 + i,
        "cpuCostAdjustment": -0.01,
        "ramCost": 1e-05,
        "totalCost": 123456789.12345,
        "pvs": {"cluster=c:name=pv": {"byteHours": 10, "cost": 0.5}} if i % 2 else None,
        "lbAllocations": None,
    }


def answer(count: int, **envelope: Any) -> dict[str, Any]:
    data = {a["name"]: a for a in (allocation(i) for i in range(count))}
    return {"code": 200, "status": "success", "data": [data], **envelope}


def read(body: bytes, window: int) -> dict[str, Any]:
    return dict(read_allocations(io.BytesIO(body), ORIGIN, window=window))


def reference(body: bytes) -> dict[str, Any]:
    parsed = RESPONSE.validate_json(body)
    assert parsed["data"] is not None
    return dict(parsed["data"][0] or {})


def comparable(record: Any) -> dict[str, Any]:
    """The fields a row stores (the only ones decoded), read through ``get`` (a streamed record
    or a dict alike), its properties included."""
    props = record.get("properties") or {}
    fields = {f: record.get(f) for f in STORED}
    if not isinstance(record, dict):  # a record's quantities are their JSON text: as Decimals
        fields.update(zip(QUANTITIES, quantities_of(record, record.name), strict=True))
    return {**fields, "properties": {k: props.get(k) for k in STORED_PROPERTIES}}


STORED = ("name", "start", "end", *rows._QUANTITIES[2:], *rows._COSTS)
STORED_PROPERTIES = (*rows._PLACES, "namespace", "namespaceLabels")


def test_the_record_decodes_every_stored_field() -> None:
    """A field a row stores but the decoder skipped would read as None: every one is declared."""
    assert set(STORED) <= set(_Allocation.__dataclass_fields__)
    assert rows._QUANTITIES[2:] == QUANTITIES  # the columns' order: their texts are written as one
    assert set(STORED_PROPERTIES) <= set(_Properties.__dataclass_fields__)


@pytest.mark.parametrize("window", [64, 700, 4096, 10**7], ids=["tiny", "under-one", "several", "whole"])
@pytest.mark.parametrize("indent", [None, 2], ids=["compact", "pretty"])
def test_every_allocation_equals_the_whole_body_parse(window: int, indent: int | None) -> None:
    body = json.dumps(answer(25, message=None), indent=indent).encode()
    got, expected = read(body, window), reference(body)
    assert list(got) == list(expected)
    assert [comparable(a) for a in got.values()] == [comparable(a) for a in expected.values()]
    first = got["ns-0/pod-0/app"]
    assert first["cpuCost"] == Decimal("0.12345") and first["ramCost"] == Decimal("1e-05")
    assert first["totalCost"] == Decimal("123456789.12345")  # exact: not through float
    assert got["ns-1/pod-7/app"]["end"] is None  # "null" read as no time


EXACT = {  # JSON numbers' texts (read through a float, as pydantic's JSON parser does: 0.1, ...5.13)
    "totalCost": "0.1000000000000000055511151231257827",
    "cpuCost": "123456789012345.123456789012345",
    "ramCost": "123456789012345678901234567890",
    "cpuCores": "100.10",
    "ramBytes": "1.50e1",
}


@pytest.mark.parametrize("window", [700, 10**7])
def test_numbers_are_the_exact_decimals_of_their_text(window: int) -> None:
    doc = answer(25)
    key = list(doc["data"][0])[12]
    doc["data"][0][key].update({field: f"@{field}@" for field in EXACT})  # placeholders for the texts
    body = json.dumps(doc).encode()
    for field, text in EXACT.items():
        body = body.replace(f'"@{field}@"'.encode(), text.encode())
    record = read(body, window)[key]
    assert {field: record.get(field) for field in ("totalCost", "cpuCost", "ramCost")} == {
        field: Decimal(EXACT[field]) for field in ("totalCost", "cpuCost", "ramCost")
    }
    assert str(record["totalCost"]) == EXACT["totalCost"]  # digits and scale as sent
    texts = dict(zip(QUANTITIES, quantities_text(record, key).split("\t"), strict=True))
    assert (texts["cpuCores"], texts["ramBytes"]) == ("100.10", "15.0")  # a Decimal's text: the scale kept


@pytest.mark.parametrize("position", [0, 12, 24])
@pytest.mark.parametrize("window", [700, 10**7])
def test_a_bad_field_fails_with_one_line_naming_it(position: int, window: int) -> None:
    doc = answer(25)
    key = list(doc["data"][0])[position]
    doc["data"][0][key]["totalCost"] = "lots"
    with pytest.raises(OpenCostUnavailable) as failed:
        read(json.dumps(doc).encode(), window)
    message = str(failed.value)
    assert message.startswith(f"{ORIGIN} with a body that is not its documented envelope")
    assert "totalCost" in message and "\n" not in message


def test_a_bad_time_names_the_allocation() -> None:
    doc = answer(3)
    doc["data"][0]["ns-2/pod-2/app"]["start"] = "yesterday"
    with pytest.raises(OpenCostUnavailable, match=r"ns-2/pod-2/app\.start: Invalid RFC3339"):
        read(json.dumps(doc).encode(), 10**7)


@pytest.mark.parametrize("window", [64, 10**7])
def test_an_error_envelope_fails_with_opencosts_message(window: int) -> None:
    body = json.dumps({"code": 500, "message": "Error: prometheus unreachable " + "x" * 200}).encode()
    with pytest.raises(OpenCostUnavailable, match="code 500: Error: prometheus unreachable"):
        read(body, window)


@pytest.mark.parametrize("window", [700, 10**7])
def test_two_sets_for_one_hour_are_refused(window: int) -> None:
    doc = answer(5)
    doc["data"].append(doc["data"][0])
    with pytest.raises(OpenCostUnavailable, match="2 sets for one accumulated hour"):
        read(json.dumps(doc).encode(), window)


def test_a_large_answer_must_give_its_code_before_its_data() -> None:
    doc = answer(25)
    reordered = {"data": doc["data"], "code": 200}
    assert read(json.dumps(reordered).encode(), 10**7)  # one window: any order
    with pytest.raises(OpenCostUnavailable, match="code None"):
        read(json.dumps(reordered).encode(), 700)


@pytest.mark.parametrize("data", [[{}], [None], []], ids=["empty-map", "null-set", "no-set"])
@pytest.mark.parametrize("window", [8, 10**7])
def test_empty_answers_have_no_allocations(data: list[Any], window: int) -> None:
    assert read(json.dumps({"code": 200, "status": "success", "data": data}).encode(), window) == {}
