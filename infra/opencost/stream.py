"""An ``/allocation`` answer read from a file in bounded windows, one allocation at a time.

Why: ``json.loads`` (or pydantic) of a whole hour builds every allocation before the first row is
written, so memory grows with the hour (about 12 KiB per container in a fresh process; a
70,000-container hour outgrows the Service's 1 GiB). Here the answer is read from its spool file
(``client.Spooled``) in windows of ``WINDOW`` bytes; each window is cut after its last complete
allocation and that slice is decoded by msgspec into records with the stored fields of
``models.Allocation`` and their checks (numbers as exact ``Decimal`` from their text, times as
aware datetimes, quantities as their JSON text, ``null`` accepted; the fields no row stores are
skipped, not built and not checked), so memory is bounded by a window's allocations,
whatever the hour's size. A record reads like the models' dicts (``get``, ``[]``) but for its
quantities (``quantities_text``, ``quantities_of``), and ``RowBuilder`` takes a row's fields from
it in a few C calls.

Why msgspec over windows rather than ijson: measured on a 100,000-container hour (161 MiB),
ijson's C backend needs 2.0 s just to tokenise it (about as long as ``json.loads`` builds it),
while msgspec decodes and validates the same bytes, window by window, in well under a second;
records without cyclic garbage collection (``gc=False``: they hold no cycles) save a quarter more.
msgspec cannot decode a partial document, hence the cut: candidate cuts are the ``},"key":{``
sequences from the window's end backwards (those followed by ``{"name"``, OpenCost's first field,
first); a candidate is right exactly when ``{`` + the slice + ``}`` decodes. A cut inside a nested
object leaves a brace unclosed, a cut inside a string leaves it unterminated, so both fail to
decode ("truncated"/"malformed") and the next candidate is tried; a ``ValidationError`` is a real
bad field and fails the answer, naming the allocation's key and the field.

The envelope: a small answer (one window) is decoded whole, in any field order. A larger one must
open with its scalars before ``"data":[{`` (OpenCost's, Go's field order: code, status, data,
message); the remainder after the last cut, with ``{"data":[{`` put back in front, is again a
whole envelope and is decoded as such, so trailing fields, a second step set (refused: one hour is
one accumulated set) and the closing brackets are all checked by the decoder, not by hand.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import IO, Annotated, Any

import msgspec

from finops.errors import OpenCostUnavailable
from infra.opencost.models import Allocation

WINDOW = 4 * 2**20  # bytes read at a time; one window's allocations are the batch in memory
_HEAD_LIMIT = 2**20  # the envelope's fields before "data" (code, status) are a few bytes

Number = Decimal | None
# A quantity (minutes, cores, bytes...) is stored as sent: its JSON text, kept as it is (any JSON
# value; ``RowBuilder.lines`` passes it to COPY only if it is a number or null). Not a Decimal:
# creating one per quantity, then its text again for COPY, was a fifth of the ingest.
Quantity = msgspec.Raw
NULL = msgspec.Raw(b"null")  # an absent quantity reads as JSON null
Time = Annotated[datetime, msgspec.Meta(tz=True)] | None  # RFC 3339 with its offset, parsed in C


class _Record(msgspec.Struct, gc=False):
    """A decoded object, also read like ``models``' dicts: ``get(field)`` (None when absent or
    null). Structs decode twice as fast as dicts (measured: a 20,000-container hour in 0.9 s
    against 1.5 s), and ``RowBuilder`` reads a row's fields from one in a few C calls."""

    def get(self, field: str, default: Any = None) -> Any:
        value = getattr(self, field, default)
        return default if value is None else value

    def __getitem__(self, field: str) -> Any:
        return getattr(self, field)


class _Properties(_Record):
    """The properties a row stores, and the namespace's labels (its owner)."""

    controllerKind: str | None = None
    controller: str | None = None
    pod: str | None = None
    container: str | None = None
    node: str | None = None
    namespace: str | None = None
    namespaceLabels: dict[str, str] | None = None


class _Allocation(_Record):
    """The fields of ``models.Allocation`` that ``provider_allocations`` stores, and only those:
    the decoder skips the others (``window``, the efficiencies, ``pvs``, ``lbAllocations``, pod
    labels and annotations...) without building them, a quarter of the decoding saved. So those
    fields are not type-checked here: a wrong type in a field never stored is not refused. The
    quantities are their JSON text (``Quantity``), checked to be numbers where they are written."""

    name: str = ""
    properties: _Properties | None = None
    start: Time = None
    end: Time = None
    minutes: Quantity = NULL
    cpuCores: Quantity = NULL
    cpuCoreRequestAverage: Quantity = NULL
    cpuCoreUsageAverage: Quantity = NULL
    cpuCoreHours: Quantity = NULL
    ramBytes: Quantity = NULL
    ramByteRequestAverage: Quantity = NULL
    ramByteUsageAverage: Quantity = NULL
    ramByteHours: Quantity = NULL
    gpuCount: Quantity = NULL
    gpuHours: Quantity = NULL
    pvBytes: Quantity = NULL
    pvByteHours: Quantity = NULL
    networkTransferBytes: Quantity = NULL
    networkReceiveBytes: Quantity = NULL
    cpuCost: Number = None
    cpuCostAdjustment: Number = None
    gpuCost: Number = None
    gpuCostAdjustment: Number = None
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
_NUMBER = b"0123456789.eE+-\t\\N"  # the bytes of JSON numbers, tabs and COPY's NULL (\\N)


def quantities_text(record: Any, name: str) -> str:
    """A streamed record's ``QUANTITIES`` for ``COPY``'s text format: their JSON texts joined by
    tabs, null as ``\\N``. PostgreSQL parses a JSON number's text to the numeric a ``Decimal`` of
    it would give (same digits, same scale: ``5e-05`` and ``Decimal("5e-05")``'s ``0.00005``
    alike). Checked at once: msgspec has validated the JSON, so once nulls are replaced, a quantity
    that is not a number leaves a byte no number has (a quote, a brace, a letter of true/false)."""
    text = b"\t".join(_quantities(record))
    if b"null" in text:
        text = text.replace(b"null", b"\\N")
    if text.translate(None, _NUMBER):
        return _quantities_slowly(record, name)
    return text.decode()


def quantities_of(record: Any, name: str) -> tuple[Decimal | None, ...]:
    """A streamed record's ``QUANTITIES`` as exact Decimals (what ``quantities_text`` writes, read
    back: the tests compare records with the models' dicts through it)."""
    return tuple(None if text == "\\N" else Decimal(text) for text in quantities_text(record, name).split("\t"))


def _quantities_slowly(record: Any, name: str) -> str:
    """A quantity sent as a string is read as a ``Decimal`` field reads it (``"0.5"``: 0.5); one
    that is not finite (``"NaN"``) or not a number refuses the answer, naming the field."""
    texts = []
    for field, raw in zip(QUANTITIES, _quantities(record), strict=True):
        value = bytes(raw)
        if value == b"null":
            texts.append("\\N")
            continue
        try:
            number = _DECIMAL.decode(value)
        except msgspec.ValidationError as exc:
            message = str(exc).partition(" - at ")[0]
            raise OpenCostUnavailable(f"OpenCost answered /allocation with {name}.{field}: {message}") from None
        if not number.is_finite():
            raise OpenCostUnavailable(
                f"OpenCost answered /allocation with {name}.{field}: {number}, not a finite number"
            )
        texts.append(value.decode() if value[:1] != b'"' else str(number))
    return "\t".join(texts)


_DECIMAL = msgspec.json.Decoder(Decimal)


class _Envelope(msgspec.Struct):
    code: int | None = None
    status: str | None = None
    message: str | None = None
    warning: str | None = None
    data: list[dict[str, _Allocation] | None] | None = None


_ENTRIES = msgspec.json.Decoder(dict[str, _Allocation])
_ENVELOPE = msgspec.json.Decoder(_Envelope)
_ALLOCATION = msgspec.json.Decoder(_Allocation)
_RAW_ENTRIES = msgspec.json.Decoder(dict[str, msgspec.Raw])
_DATA_START = re.compile(rb'"data"\s*:\s*\[\s*\{')
_NAME_CUT = re.compile(rb'\}\s*,\s*"(?:[^"\\]|\\.)*"\s*:\s*\{\s*"name"')
_NULL_TIME = re.compile(rb'("(?:start|end)"\s*:\s*)"null"')
_ANY_CUT = re.compile(rb'\}\s*,\s*"(?:[^"\\]|\\.)*"\s*:\s*\{')


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
    if not more:  # the whole answer fits one window: decode it whole, in any field order
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
    envelope = _decode_envelope(scalars + b"}")
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
    """The allocations before the last boundary that decodes, and where the rest starts."""
    for pattern in (_NAME_CUT, _ANY_CUT):
        position = len(buffer)
        while (position := buffer.rfind(b"}", 0, position)) >= 0:
            if not pattern.match(buffer, position):
                continue
            try:
                entries = _ENTRIES.decode(_null_times(b"{" + buffer[: position + 1] + b"}"))
            except msgspec.ValidationError as exc:
                raise _failure(b"{" + buffer[: position + 1] + b"}", exc, envelope=False) from None
            except msgspec.DecodeError:
                continue  # inside a nested object or a string: an earlier candidate
            # The rest starts after "}," (the comma and any whitespace around it).
            rest = buffer.index(b",", position + 1) + 1
            return entries, rest
    return None


def _tail(buffer: bytes) -> Iterator[tuple[str, Allocation]]:
    """The last allocations and the envelope's end, as a whole envelope of their own."""
    envelope = _decode_envelope(b'{"data":[{' + buffer)
    _check_code(envelope, has_data=True, code_seen=True)
    sets = envelope.data or []
    if len(sets) > 1:
        raise _Refused(f"{len(sets)} sets for one accumulated hour")
    yield from (sets[0] or {}).items()  # type: ignore[misc]


def _whole(body: bytes) -> Iterator[tuple[str, Allocation]]:
    envelope = _decode_envelope(body)
    _check_code(envelope, has_data=envelope.data is not None)
    sets = envelope.data or []
    if len(sets) > 1:
        raise _Refused(f"{len(sets)} sets for one accumulated hour")
    if sets:
        yield from (sets[0] or {}).items()  # type: ignore[misc]


def _null_times(text: bytes) -> bytes:
    """Some OpenCost versions write a missing time as the string ``"null"`` (an empty range's
    window): read as JSON null. A time is only ever a ``start`` or ``end`` field."""
    return _NULL_TIME.sub(rb"\1null", text) if b'"null"' in text else text


def _decode_envelope(body: bytes) -> _Envelope:
    try:
        return _ENVELOPE.decode(_null_times(body))
    except msgspec.ValidationError as exc:
        raise _failure(body, exc, envelope=True) from None
    except msgspec.DecodeError as exc:
        raise AnswerError(f"body: {exc}") from None


def _check_code(envelope: _Envelope, *, has_data: bool, code_seen: bool = False) -> None:
    if code_seen and envelope.code is None:
        return  # the code was read from the answer's start
    if envelope.code != 200 or not has_data:
        raise _Refused(f"code {envelope.code}: {envelope.message or 'no data'}")


class _RawEnvelope(msgspec.Struct):
    data: list[dict[str, msgspec.Raw] | None] | None = None


def _failure(text: bytes, exc: msgspec.ValidationError, *, envelope: bool) -> AnswerError:
    """The error naming the allocation (msgspec's path says ``[...]`` for a map key): on this
    rare path the allocations are decoded again one by one to find the key."""
    try:
        sets = msgspec.json.decode(text, type=_RawEnvelope).data or [] if envelope else [_RAW_ENTRIES.decode(text)]
        for entries in sets:
            for key, raw in (entries or {}).items():
                try:
                    _ALLOCATION.decode(_null_times(bytes(raw)))
                except msgspec.ValidationError as inner:
                    return AnswerError(f"{key}{_where(inner)}")
    except msgspec.DecodeError:
        pass
    return AnswerError(_where(exc))


def _where(exc: msgspec.ValidationError) -> str:
    """msgspec's "Expected `decimal | null`, got `str` - at `$[...].cpuCost`" as one line."""
    text = str(exc)
    message, _, path = text.partition(" - at ")
    return f"{path.strip('`').removeprefix('$') or 'body'}: {message}" if path else text
