"""Kubernetes-shaped errors for the sandbox API server.

The official client turns any non-2xx answer into ``ApiException`` and callers read the
``Status`` body (``reason``, ``message``, ``code``) to decide what happened. So every failure
in the sandbox is one ``ApiError`` carrying exactly those fields, raised by the store and
serialised once by the WSGI layer; tests that use ``KubeStore`` directly see the same error.
Messages copy the real apiserver's wording so the adapter's error translation is tested
against realistic text.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A failure the API server reports as a ``Status`` object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> dict[str, Any]:
        """The ``Status`` body the real apiserver would send."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def _details(group: str, plural: str, name: str) -> dict[str, Any]:
    return {"name": name, "group": group, "kind": plural}


def _about(code: int, reason: str, group: str, plural: str, name: str, message: str) -> ApiError:
    """An error about one object: ``{object}`` in ``message`` becomes its qualified name."""
    what = f'{_qualified(group, plural)} "{name}"'
    return ApiError(code, reason, message.replace("{object}", what, 1), details=_details(group, plural, name))


def not_found(group: str, plural: str, name: str) -> ApiError:
    return _about(404, "NotFound", group, plural, name, "{object} not found")


def resource_not_found(path: str) -> ApiError:
    return ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return _about(409, "AlreadyExists", group, plural, name, "{object} already exists")


def conflict(group: str, plural: str, name: str) -> ApiError:
    return _about(
        409,
        "Conflict",
        group,
        plural,
        name,
        "Operation cannot be fulfilled on {object}: the object has been modified; please apply your "
        "changes to the latest version and try again",
    )


def invalid(group: str, plural: str, name: str, why: str) -> ApiError:
    return _about(422, "Invalid", group, plural, name, "{object} is invalid: " + why)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(method: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", f"the server does not allow this method ({method})")


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"application/json-patch+json, application/merge-patch+json, "
        f'application/strategic-merge-patch+json (got "{content_type}")',
    )


def success(group: str, plural: str, name: str, uid: str) -> dict[str, Any]:
    """The ``Status`` body of a completed delete."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {**_details(group, plural, name), "uid": uid},
    }
