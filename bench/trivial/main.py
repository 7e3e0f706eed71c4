"""The floor of the webhook benchmark: a functions-framework function that does nothing but
answer 202. Served with the same command and ``THREADS`` as ``on_sync``, it measures what
functions-framework, gunicorn and the client cost on their own.
"""

from __future__ import annotations

import flask
import functions_framework


@functions_framework.http
def ack(request: flask.Request) -> tuple[str, int]:
    return "", 202
