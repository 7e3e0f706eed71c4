"""An ``/allocation`` answer read from a file in bounded windows, one allocation at a time.

The answer is read from its spool file (``client.Spooled``) in windows of ``WINDOW`` bytes, so
memory is bounded by a window's allocations whatever the hour's size (parsed whole, a
70,000-container hour outgrows the Service's 1 GiB). Each window is cut after its last complete
allocation, and that slice is parsed by the standard library's ``json`` with every JSON number
that has a fraction or an exponent read as the exact ``Decimal`` of its text
(``parse_float=Decimal``; integers are ``int``s), then validated by pydantic into records holding
the fields of ``models.Allocation`` that a row stores: costs as finite ``Decimal``s (a numeric
string is read as its number), times as aware datetimes, text and labels as ``str``, ``null``
accepted. The other fields are parsed but neither kept nor checked. The quantities are kept as
parsed and checked when ``quantities_text`` writes them, which names the field. A record is read
by attribute (``RowBuilder`` does), or like the models' dicts (``get``, ``[]``).

Not pydantic's ``validate_json``: it reads a JSON number through a float (``100.10`` would
arrive as ``100.1``), where the rows store the number as sent.

The cut: the candidates are the ``},"key":{`` sequences, tried from the window's end backwards
(those followed by ``{"name"``, OpenCost's first field, first). A candidate is right exactly when
``{`` + the slice + ``}`` parses. A cut inside a nested object leaves a brace unclosed and a cut
inside a string leaves it unterminated, so both fail to parse and the next candidate is tried. A
validation error is a real bad field and fails the answer, naming the allocation's key and the
field.

The envelope: a small answer (one window) is parsed whole, in any field order. A larger one must
open with its scalars before ``"data":[{`` (OpenCost's field order, which is Go's: code, status,
data, message). The remainder after the last cut, with ``{"data":[{`` put back in front, is a
whole envelope again and is parsed as one, so the parser and the validator check trailing
fields, a second step set (refused: one hour is one accumulated set) and the closing brackets.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import IO, Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from finops.errors import OpenCostUnavailable
from infra.opencost.models import Allocation

WINDOW = 4 * 2**20  # bytes read at a time; one window's allocations are the batch in memory
_HEAD_LIMIT = 2**20  # the envelope's fields before "data" (code, status) are a few bytes

# A cost: the exact ``Decimal`` its JSON number was parsed as (an integer's ``Decimal``), or a
# numeric string read as its ``Decimal``; a bool, a non-finite or non-numeric value is refused.
Number = Decimal | None
# A quantity (minutes, cores, bytes...) is kept as parsed, whatever the JSON value, and checked
# where it is written (``quantities_text``), whose refusal names the allocation and the field.
Quantity = Any
Time = AwareDatetime | None  # RFC 3339 with its offset


_LENIENT = ConfigDict(extra="ignore")


class _Record:
    """A validated object, also read like ``models``' dicts: ``get(field)`` (None when absent or
    null), ``[field]``; ``RowBuilder`` reads a row's fields from its attributes."""

    __slots__ = ()

    def get(self, field: str, default: Any = None) -> Any:
        value = getattr(self, field, default)
        return default if value is None else value

    def __getitem__(self, field: str) -> Any:
        return getattr(self, field)


@dataclass(slots=True, config=_LENIENT)
class _Properties(_Record):
    """The properties a row stores, and the namespace's labels (its owner)."""

    controllerKind: str | None = None
    controller: str | None = None
    pod: str | None = None
    container: str | None = None
    node: str | None = None
    namespace: str | None = None
    namespaceLabels: dict[str, str] | None = None


@dataclass(slots=True, config=_LENIENT)
class _GpuAllocation(_Record):
    """``models.GpuAllocation``: the averages kept as parsed (checked by ``gpu_text``)."""

    gpuRequestAverage: Quantity = None
    gpuUsageAverage: Quantity = None
    isGPUShared: bool | None = None
    gpuDevice: str | None = None
    gpuModel: str | None = None
    gpuUUID: str | None = None
    gpuSharing: str | None = None  # the Prometheus source's (models.GpuAllocation)
    gpuProfile: str | None = None


@dataclass(slots=True, config=_LENIENT)
class _Allocation(_Record):
    """The fields of ``models.Allocation`` that ``provider_allocations`` stores, and only those.
    The others (``window``, the efficiencies, ``pvs``, ``lbAllocations``, pod labels and
    annotations...) are parsed but not validated, so a wrong type in a field never stored is not
    refused."""

    name: str = ""
    properties: _Properties | None = None
    start: Time = None
    end: Time = None
    minutes: Quantity = None
    cpuCores: Quantity = None
    cpuCoreRequestAverage: Quantity = None
    cpuCoreUsageAverage: Quantity = None
    cpuCoreHours: Quantity = None
    ramBytes: Quantity = None
    ramByteRequestAverage: Quantity = None
    ramByteUsageAverage: Quantity = None
    ramByteHours: Quantity = None
    gpuCount: Quantity = None
    gpuHours: Quantity = None
    pvBytes: Quantity = None
    pvByteHours: Quantity = None
    networkTransferBytes: Quantity = None
    networkReceiveBytes: Quantity = None
    cpuCost: Number = None
    cpuCostAdjustment: Number = None
    gpuCost: Number = None
    gpuCostAdjustment: Number = None
    gpuAllocation: _GpuAllocation | None = None
    ramCost: Number = None
    ramCostAdjustment: Number = None
    pvCost: Number = None
    pvCostAdjustment: Number = None
    networkCost: Number = None
    networkCostAdjustment: Number = None
    loadBalancerCost: Number = None
    loadBalancerCostAdjustment: Number = None
    sharedCost: Number = None
    externalCost: Number = None
    totalCost: Number = None


QUANTITIES = tuple(f for f, kind in _Allocation.__annotations__.items() if kind == "Quantity")
_quantities = operator.attrgetter(*QUANTITIES)


def quantities_text(record: Any, name: str) -> str:
    """A streamed record's ``QUANTITIES`` for ``COPY``'s text format: each number's text (a
    ``Decimal`` of the JSON's, or an ``int``) joined by tabs, null as ``\\N``. PostgreSQL parses a
    ``Decimal``'s text to the same numeric, scale included (``Decimal("5e-05")``'s ``0.00005``).
    A JSON number is always a finite ``Decimal`` or an ``int``: any other value takes the slow
    path, which reads a numeric string as its number and refuses the rest, naming the field."""
    values = _quantities(record)
    if not _NUMBERS.issuperset(map(type, values)):
        values = _quantities_slowly(record, name)
    text = "\t".join(map(str, values))
    return text.replace("None", "\\N") if "None" in text else text


_NUMBERS = frozenset({Decimal, int, type(None)})
_DECIMAL = TypeAdapter(Decimal)
_NO_GPU = (None,) * 8


def gpu_values(gpu: Any, name: str) -> tuple[Any, ...]:
    """An allocation's ``gpuAllocation`` (a record, a dict or None) as the values of its eight
    columns: the request and usage averages (numbers, checked as quantities are), the shared flag,
    the device, model and UUID, and the sharing and MIG profile (the Prometheus source's)."""
    if not gpu:
        return _NO_GPU
    averages = []
    for field in ("gpuRequestAverage", "gpuUsageAverage"):
        value = gpu.get(field)
        if value is not None and (type(value) not in _NUMBERS or (type(value) is Decimal and not value.is_finite())):
            try:
                value = _DECIMAL.validate_python(value)
            except ValidationError as exc:
                message = exc.errors(include_url=False, include_input=False)[0]["msg"]
                raise OpenCostUnavailable(
                    f"OpenCost answered /allocation with {name}.gpuAllocation.{field}: {message}"
                ) from None
            if not value.is_finite():
                raise OpenCostUnavailable(
                    f"OpenCost answered /allocation with {name}.gpuAllocation.{field}: {value}, not a finite number"
                )
        averages.append(value)
    return (
        *averages,
        *(gpu.get(field) for field in ("isGPUShared", "gpuDevice", "gpuModel", "gpuUUID", "gpuSharing", "gpuProfile")),
    )


def _quantities_slowly(record: Any, name: str) -> tuple[Decimal | int | None, ...]:
    """A quantity sent as a string is read as a ``Decimal`` field reads it (``"0.5"``: 0.5); one
    that is not a finite number (``"NaN"``, true, an object) refuses the answer, naming the field."""
    values = []
    for field, value in zip(QUANTITIES, _quantities(record), strict=True):
        if value is not None and type(value) not in _NUMBERS:
            try:
                value = _DECIMAL.validate_python(value)
            except ValidationError as exc:
                message = exc.errors(include_url=False, include_input=False)[0]["msg"]
                raise OpenCostUnavailable(f"OpenCost answered /allocation with {name}.{field}: {message}") from None
        values.append(value)
    return tuple(values)


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="ignore")

    code: int | None = None
    status: str | None = None
    message: str | None = None
    warning: str | None = None
    data: list[dict[str, _Allocation] | None] | None = None


_ENTRIES = TypeAdapter(dict[str, _Allocation])
_ENVELOPE = TypeAdapter(_Envelope)
_DATA_START = re.compile(rb'"data"\s*:\s*\[\s*\{')
_NAME_CUT = re.compile(rb'\}\s*,\s*"(?:[^"\\]|\\.)*"\s*:\s*\{\s*"name"')
_NULL_TIME = re.compile(rb'("(?:start|end)"\s*:\s*)"null"')
_ANY_CUT = re.compile(rb'\}\s*,\s*"(?:[^"\\]|\\.)*"\s*:\s*\{')


def _validated(adapter: TypeAdapter[Any], text: bytes) -> Any:
    """``text`` parsed (numbers as exact ``Decimal``s) and validated by ``adapter``: raises
    ``ValidationError`` for a bad field, another ``ValueError`` if ``text`` is not JSON. (The
    collector writes an hour under ``infra.heap.relaxed_gc``: the windows' objects hold no cycles.)"""
    return adapter.validate_python(json.loads(_null_times(text), parse_float=Decimal))


class AnswerError(Exception):
    """The answer is not OpenCost's documented envelope (internal: the client names the origin)."""


def read_allocations(file: IO[bytes], origin: str, *, window: int = WINDOW) -> Iterator[tuple[str, Allocation]]:
    """Every ``(key, allocation)`` of the answer in ``file`` (read from its start), in order.

    ``origin`` ("OpenCost at URL answered /allocation") starts every error: an answer that is not
    the documented envelope, or names a bad field, raises ``OpenCostUnavailable`` with one line
    naming the field; an error envelope (``code`` other than 200) raises it with OpenCost's
    ``message``. Nothing is yielded before the envelope's ``code`` has been read.
    """
    try:
        yield from _read(file, window)
    except AnswerError as exc:
        raise OpenCostUnavailable(f"{origin} with a body that is not its documented envelope: {exc}") from None
    except _Refused as exc:
        raise OpenCostUnavailable(f"{origin} with {exc}") from None


class _Refused(Exception):
    """A well-formed envelope that is not a usable answer (error code, several sets)."""


def _read(file: IO[bytes], window: int) -> Iterator[tuple[str, Allocation]]:
    head = file.read(window)
    more = file.read(1)
    if not more:  # the whole answer fits one window: parse it whole, in any field order
        yield from _whole(head)
        return
    head += more
    while (found := _DATA_START.search(head)) is None:
        chunk = file.read(window)
        if not chunk:  # no allocations after all (an error envelope, "data":[null]): small enough
            yield from _whole(head)
            return
        if len(head) > _HEAD_LIMIT:
            raise AnswerError(f'"data":[{{...}}] not found in the first {_HEAD_LIMIT} bytes of a large answer')
        head += chunk
    scalars = head[: found.start()].rstrip()
    if scalars.endswith(b","):
        scalars = scalars[:-1]
    envelope = _envelope(scalars + b"}")
    _check_code(envelope, has_data=True)
    buffer = head[found.end() :]
    while True:
        chunk = file.read(window)
        if not chunk:
            yield from _tail(buffer)
            return
        buffer += chunk
        cut = _cut(buffer)
        if cut is None:  # no complete allocation yet (one larger than a window): read on
            continue
        entries, end = cut
        yield from entries.items()
        buffer = buffer[end:]


def _cut(buffer: bytes) -> tuple[dict[str, Any], int] | None:
    """The allocations before the last boundary that parses, and where the rest starts."""
    for pattern in (_NAME_CUT, _ANY_CUT):
        position = len(buffer)
        while (position := buffer.rfind(b"}", 0, position)) >= 0:
            if not pattern.match(buffer, position):
                continue
            try:
                entries = _validated(_ENTRIES, b"{" + buffer[: position + 1] + b"}")
            except ValidationError as exc:
                raise AnswerError(_where(exc)) from None
            except ValueError:
                continue  # inside a nested object or a string: an earlier candidate
            # The rest starts after "}," (the comma and any whitespace around it).
            rest = buffer.index(b",", position + 1) + 1
            return entries, rest
    return None


def _tail(buffer: bytes) -> Iterator[tuple[str, Allocation]]:
    """The last allocations and the envelope's end, as a whole envelope of their own."""
    envelope = _envelope(b'{"data":[{' + buffer)
    _check_code(envelope, has_data=True, code_seen=True)
    return _only_set(envelope)


def _whole(body: bytes) -> Iterator[tuple[str, Allocation]]:
    envelope = _envelope(body)
    _check_code(envelope, has_data=envelope.data is not None)
    return _only_set(envelope)


def _only_set(envelope: _Envelope) -> Iterator[tuple[str, Allocation]]:
    sets = envelope.data or []
    if len(sets) > 1:
        raise _Refused(f"{len(sets)} sets for one accumulated hour")
    return iter((sets[0] or {}).items() if sets else ())  # type: ignore[arg-type]


def _null_times(text: bytes) -> bytes:
    """Some OpenCost versions write a missing time as the string ``"null"`` (an empty range's
    window): read as JSON null. A time is only ever a ``start`` or ``end`` field."""
    return _NULL_TIME.sub(rb"\1null", text) if b'"null"' in text else text


def _envelope(body: bytes) -> _Envelope:
    try:
        envelope: _Envelope = _validated(_ENVELOPE, body)
    except ValidationError as exc:
        raise AnswerError(_where(exc)) from None
    except ValueError as exc:
        raise AnswerError(f"body: {exc}") from None
    return envelope


def _check_code(envelope: _Envelope, *, has_data: bool, code_seen: bool = False) -> None:
    if code_seen and envelope.code is None:
        return  # the code was read from the answer's start
    if envelope.code != 200 or not has_data:
        raise _Refused(f"code {envelope.code}: {envelope.message or 'no data'}")


# pydantic's error types for a time that is not RFC 3339 with its offset
_TIME_ERRORS = frozenset({"datetime_parsing", "datetime_from_date_parsing", "datetime_type", "timezone_aware"})


def _where(exc: ValidationError) -> str:
    """The first error as one line: where (``key.field``, the envelope's ``data[0]`` left out:
    the allocation's key names it) and what."""
    error = exc.errors(include_url=False, include_input=False)[0]
    location = list(error["loc"])
    if location[:1] == ["data"] and len(location) > 2:
        location = location[2:]  # data, the set's index: the key that follows names the allocation
    where = ".".join(map(str, location)) or "body"
    message = error["msg"]
    if error["type"] in _TIME_ERRORS:
        message = f"Invalid RFC3339 time with its offset ({message})"
    return f"{where}: {message}"
