"""``aggregate=``: how allocations are keyed and combined (OpenCost's ``GenerateKey``).

Keys are generated exactly as OpenCost does, corner cases included. A member lacking the aggregated field lands in
``__unallocated__`` at that position (``shop/__unallocated__`` for ``namespace,label:team``), a
controller key is ``<kind>:<name>`` (``deployment:web``), and label keys are looked up sanitised
(``label:cost-center`` reads ``cost_center``), with namespace labels already merged into pod labels.

No ``aggregate`` (or an empty one) keeps one allocation per container, named
``cluster/node/namespace/pod/container``.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox.opencost.allocation import UNALLOCATED, UNMOUNTED, Alloc, Properties
from sandbox.opencost.model import sanitize_label
from sandbox.opencost.windows import QueryError

KeyPart = Callable[[Properties], str]

_LABEL_ALIASES = {"department": "department", "environment": "env", "owner": "owner", "product": "app", "team": "team"}
_CONTROLLER_KINDS = {"deployment", "statefulset", "daemonset", "job"}


def _or_unallocated(value: str) -> str:
    return value or UNALLOCATED


def _controller(p: Properties) -> str:
    if not p.controller:
        return UNALLOCATED
    return f"{p.controller_kind}:{p.controller}" if p.controller_kind else p.controller


def _label(name: str) -> KeyPart:
    return lambda p: p.labels.get(name, UNALLOCATED)


def _of_kind(kind: str) -> KeyPart:
    return lambda p: p.controller if p.controller and p.controller_kind == kind else UNALLOCATED


def _service(p: Properties) -> str:
    if not p.services:
        return UNALLOCATED
    if UNMOUNTED in (p.pod, p.namespace, p.container):
        return UNMOUNTED
    return p.services[0]


_SIMPLE: dict[str, KeyPart] = {
    "cluster": lambda p: p.cluster,
    "node": lambda p: p.node,
    "namespace": lambda p: p.namespace,
    "controllerkind": lambda p: _or_unallocated(p.controller_kind),
    "controller": _controller,
    "pod": lambda p: p.pod,
    "container": lambda p: p.container,
    "providerid": lambda p: p.provider_id,
    "service": _service,
}


def parse_aggregate(text: str | None) -> tuple[str, ...] | None:
    """Normalised aggregation properties, or ``None`` for per-container results."""
    if text is None or not text.strip():
        return None
    props: list[str] = []
    for raw in text.split(","):
        item = raw.strip()
        lowered = item.lower()
        if lowered.startswith("label:"):
            name = item[len("label:") :].strip()
            if not name:
                raise QueryError("invalid 'aggregate' parameter: label: needs a label name, e.g. label:team")
            normal = f"label:{sanitize_label(name)}"
        elif lowered.startswith("annotation:"):
            normal = f"annotation:{sanitize_label(item[len('annotation:') :].strip())}"
        elif lowered in _SIMPLE or lowered in _LABEL_ALIASES or lowered in _CONTROLLER_KINDS:
            normal = lowered
        else:
            raise QueryError(f"invalid 'aggregate' parameter: invalid allocation property: {item!r}")
        if normal not in props:
            props.append(normal)
    return tuple(props)


def key_function(props: tuple[str, ...]) -> Callable[[Properties], str]:
    parts: list[KeyPart] = []
    for prop in props:
        if prop.startswith("label:"):
            parts.append(_label(prop[len("label:") :]))
        elif prop.startswith("annotation:"):
            parts.append(lambda p: UNALLOCATED)  # annotations are not simulated
        elif prop in _LABEL_ALIASES:
            parts.append(_label(_LABEL_ALIASES[prop]))
        elif prop in _CONTROLLER_KINDS:
            parts.append(_of_kind(prop))
        else:
            parts.append(_SIMPLE[prop])
    if len(parts) == 1:
        return parts[0]
    return lambda p: "/".join(part(p) for part in parts)


def aggregate(allocs: list[Alloc], props: tuple[str, ...] | None, keep_labels: bool) -> dict[str, Alloc]:
    """Group by key and merge; the first member of a group is merged into (callers own the list)."""
    out: dict[str, Alloc] = {}
    key_of = key_function(props) if props is not None else None
    for alloc in allocs:
        key = key_of(alloc.props) if key_of is not None else alloc.name
        existing = out.get(key)
        if existing is None:
            alloc.name = key
            out[key] = alloc
        else:
            existing.merge(alloc, keep_labels)
    return out
