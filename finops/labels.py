"""Kubernetes names and label keys: validation before they reach a query, and ownership lookup.

Every pattern is applied with ``fullmatch``: ``re.match`` with a trailing ``$`` also accepts a
final newline (``"shop\\n"``), which would be stored and then fail every later lookup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from finops.errors import InvalidInput

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_PROMETHEUS_INVALID = re.compile(r"[^a-zA-Z0-9_]")
# Path-segment names may hold almost anything; we still refuse what PostgreSQL text cannot
# store (NUL, lone surrogates) and control characters, which no real object name carries.
_UNSTORABLE = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")

MAX_NAME_LENGTH = 253
RBAC_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
"""Kinds whose names follow the path-segment rule (``system:controller:foo``,
``cert-manager-webhook:dynamic-serving``) rather than the DNS-1123 subdomain rule."""


def is_subdomain(value: object) -> bool:
    """A DNS-1123 subdomain: lower-case alphanumerics, ``-`` and ``.``, 253 characters at most."""
    return isinstance(value, str) and len(value) <= MAX_NAME_LENGTH and _DNS1123_SUBDOMAIN.fullmatch(value) is not None


def is_label(value: object) -> bool:
    """A DNS-1123 label: lower-case alphanumerics and ``-``, 63 characters at most."""
    return isinstance(value, str) and len(value) <= 63 and _DNS1123_LABEL.fullmatch(value) is not None


def is_path_segment_name(value: object) -> bool:
    """Kubernetes' path-segment rule (RBAC objects): not ``.`` or ``..``, no ``/`` or ``%``;
    also non-empty, 253 characters at most and free of control characters."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_NAME_LENGTH
        and value not in {".", ".."}
        and "/" not in value
        and "%" not in value
        and _UNSTORABLE.search(value) is None
    )


def is_object_name(kind: str, value: object) -> bool:
    """Whether ``value`` is a valid name for an object of ``kind``."""
    return is_path_segment_name(value) if kind in RBAC_KINDS else is_subdomain(value)


def validate_object_name(kind: str, value: str, *, field: str = "name") -> str:
    """``value`` when it is a valid name for ``kind``, else ``InvalidInput`` naming ``field``."""
    if not is_object_name(kind, value):
        rule = "a path segment: not '.' or '..', no '/', '%'" if kind in RBAC_KINDS else "a DNS-1123 subdomain"
        raise InvalidInput(f"{field}: {str(value)[:80]!r} is not a valid {kind} name, which must be {rule}")
    return value


def validate_namespace(value: str, *, field: str = "namespace") -> str:
    """A namespace must be a DNS-1123 label (63 characters at most)."""
    if not is_label(value):
        raise InvalidInput(f"{field}: {value!r} is not a valid Kubernetes namespace (DNS-1123 label)")
    return value


def validate_label_key(value: str, *, field: str = "label key") -> str:
    """A label key: optional DNS-1123 subdomain prefix and ``/``, then a name of 63 at most."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field}: must be a non-empty label key")
    prefix, _, name = value.rpartition("/")
    if prefix and not is_subdomain(prefix):
        raise InvalidInput(f"{field}: {value!r} has an invalid prefix")
    if len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        raise InvalidInput(f"{field}: {value!r} is not a valid Kubernetes label key")
    return value


def sanitize_label_key(key: str) -> str:
    """The Prometheus-style key OpenCost reports (``cost-center`` becomes ``cost_center``)."""
    return _PROMETHEUS_INVALID.sub("_", key)


def owner_label(labels: Mapping[str, str] | None, key: str) -> str | None:
    """The value of label ``key`` as given or in OpenCost's sanitised form; None when absent."""
    if not labels:
        return None
    value = labels.get(key)
    if value is None:
        value = labels.get(sanitize_label_key(key))
    return value or None
