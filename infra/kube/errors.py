"""Translating ``kubernetes``/``urllib3`` failures into the product's error tree.

Callers decide what to do from the class alone (``finops.errors``): ``TemporaryError`` means
retry later, ``PermanentError`` means fix the request or the deployment. So each HTTP status
maps to the class that matches the right reaction, not to the nearest name: a 409 is a
``Conflict`` (re-read and retry), 429 and 5xx are ``KubernetesUnavailable``, and 401/403 are
``PermanentError`` naming the exact RBAC rule to add, because retrying cannot grant a
permission. Messages carry the server's own ``Status.message`` and what was addressed, never
request headers or bodies, so a bearer token or a Secret's data cannot reach a log.

``kubernetes`` is imported only once something has failed, when it is loaded anyway.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from finops.errors import (
    Conflict,
    FinOpsError,
    InvalidInput,
    KubernetesUnavailable,
    NotFound,
    PermanentError,
)
from infra.kube.operations import Operation

_MAX_MESSAGE = 500


class AlreadyExists(Conflict):
    """The object to create already exists (HTTP 409 AlreadyExists); retrying will not help."""


def parse_status(body: object, fallback: str) -> tuple[str, str]:
    """``(message, reason)`` of a Kubernetes ``Status`` body; ``fallback`` if it is not one.

    The raw body is never returned: it could echo what was sent.
    """
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    status = None
    if isinstance(body, str):
        try:
            status = json.loads(body)
        except ValueError:
            status = None
    if isinstance(status, dict) and isinstance(status.get("message"), str):
        return str(status["message"])[:_MAX_MESSAGE], str(status.get("reason") or "")
    return fallback[:_MAX_MESSAGE], ""


def from_status(status: int, message: str, operation: Operation, reason: str = "") -> FinOpsError:
    """The error for an HTTP ``status`` (and ``Status.reason``) answered to ``operation``."""
    if status == 404:
        return NotFound(f"Kubernetes object not found: {operation.target()} ({message})")
    if status == 409 and (reason == "AlreadyExists" or operation.verb == "create"):
        return AlreadyExists(f"cannot {operation.describe()}: {message}")
    if status == 409:
        return Conflict(f"conflict on {operation.describe()}: {message}")
    if status in (400, 422):
        return InvalidInput(f"Kubernetes rejected {operation.describe()}: {message}")
    if status in (401, 403):
        what = "did not accept our credentials" if status == 401 else "denied the request"
        if operation.is_discovery:  # a nonResourceURL: no Role rule of ours would grant it
            fix = (
                "discovery is granted to every authenticated user by the ClusterRole system:discovery; "
                "check the credentials and that ClusterRole's binding"
            )
        else:
            fix = f"grant the service account '{operation.permission}' in its Role/ClusterRole"
        return PermanentError(f"Kubernetes {what} (HTTP {status}) to {operation.describe()}: {fix} ({message})")
    if status == 429 or status >= 500 or status == 0:
        return KubernetesUnavailable(
            f"Kubernetes API unavailable (HTTP {status}) for {operation.describe()}: {message}"
        )
    return PermanentError(f"Kubernetes answered HTTP {status} to {operation.describe()}: {message}")


def translate(exc: BaseException, operation: Operation) -> FinOpsError | None:
    """The product error for a client-library exception, or ``None`` if it is not one."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        message, reason = parse_status(exc.body, str(exc.reason or ""))
        return from_status(int(exc.status or 0), message, operation, reason)
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError):
        cause = getattr(exc, "reason", None)  # MaxRetryError wraps the connect/read error
        detail = type(exc).__name__ + (f" ({type(cause).__name__})" if isinstance(cause, BaseException) else "")
        return KubernetesUnavailable(f"cannot reach the Kubernetes API to {operation.describe()}: {detail}")
    return None


@contextmanager
def wrap_errors(operation: Operation) -> Iterator[None]:
    """Re-raise library exceptions from the block as ``finops.errors`` (``raise ... from``)."""
    try:
        yield
    except FinOpsError:
        raise
    except Exception as exc:
        error = translate(exc, operation)
        if error is None:
            raise
        raise error from exc
