"""Kubernetes names and label keys: validation before they reach a query, and ownership lookup."""

from __future__ import annotations

import re
from collections.abc import Mapping

from finops.errors import InvalidInput

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PROMETHEUS_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def validate_namespace(value: str, *, field: str = "namespace") -> str:
    """A namespace must be a DNS-1123 label (63 characters at most)."""
    if not isinstance(value, str) or len(value) > 63 or not _DNS1123_LABEL.match(value):
        raise InvalidInput(f"{field}: {value!r} is not a valid Kubernetes namespace (DNS-1123 label)")
    return value


def validate_label_key(value: str, *, field: str = "label key") -> str:
    """A label key: optional DNS-1123 subdomain prefix and ``/``, then a name of 63 at most."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field}: must be a non-empty label key")
    prefix, _, name = value.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        raise InvalidInput(f"{field}: {value!r} has an invalid prefix")
    if len(name) > 63 or not _LABEL_NAME.match(name):
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
