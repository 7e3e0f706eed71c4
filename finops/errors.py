"""The error tree, split by what the caller should do next.

    FinOpsError                    root; never raised directly
    ├── PermanentError             bad input or configuration: HTTP 4xx, do not retry
    │   ├── InvalidInput           a request or document failed validation (400)
    │   ├── Unauthorized           missing or wrong credentials (401)
    │   ├── NotFound               the named object does not exist (404)
    │   ├── IncompleteData         the period's data cannot make the report asked for (409)
    │   └── SourceMisconfigured    the allocation source cannot answer as configured (500)
    └── TemporaryError             a dependency is unavailable: HTTP 503, retry later
        ├── OpenCostUnavailable
        ├── PrometheusUnavailable
        ├── KubernetesUnavailable
        ├── DatabaseUnavailable
        └── Conflict               an optimistic-concurrency clash (409 from Kubernetes)

Adapters translate their library's exceptions into these at their boundary (``raise ... from``),
so no ``httpx``, ``psycopg`` or ``kubernetes`` exception travels past ``infra/``. Each class's
docstring is its default message, so a subclass is a name and one sentence.
"""

from __future__ import annotations


class FinOpsError(Exception):
    """An error in the cost functions."""

    http_status = 500

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class PermanentError(FinOpsError):
    """The request or configuration is invalid; retrying will not help."""

    http_status = 400


class InvalidInput(PermanentError):
    """The input failed validation."""

    http_status = 400


class Unauthorized(PermanentError):
    """Missing or wrong credentials."""

    http_status = 401


class NotFound(PermanentError):
    """The named object does not exist."""

    http_status = 404


class IncompleteData(PermanentError):
    """The period's allocation data is incomplete or unpriced; no report was made."""

    http_status = 409

    def __init__(self, message: str | None = None, *, coverage: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.coverage = coverage  # the refused period's coverage document, for the caller to show


class SourceMisconfigured(PermanentError):
    """The allocation source cannot answer as configured (a rejected query, missing metrics)."""

    http_status = 500  # not the caller's input: the cluster's monitoring must be fixed


class TemporaryError(FinOpsError):
    """A dependency is unavailable; retry later."""

    http_status = 503


class OpenCostUnavailable(TemporaryError):
    """OpenCost is unavailable or answered something that is not its documented API."""


class PrometheusUnavailable(TemporaryError):
    """Prometheus is unavailable or answered something that is not its documented HTTP API."""


class KubernetesUnavailable(TemporaryError):
    """The Kubernetes API is unavailable."""


class DatabaseUnavailable(TemporaryError):
    """PostgreSQL is unavailable."""


class Conflict(TemporaryError):
    """The object changed while we were updating it (resourceVersion conflict)."""
