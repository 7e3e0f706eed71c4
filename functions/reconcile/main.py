"""``reconcile``: not implemented yet (tracked in issue #4: PriceBook, Offering and Subscription reconciliation).

It answers 501 so a caller (a CronJob, Argo CD, ``kn``) sees a failure rather than a fake success.
"""

from __future__ import annotations

import flask
import functions_framework

from functions.edge import health, not_implemented


@functions_framework.http
def reconcile(request: flask.Request) -> flask.Response:
    return health(request) or not_implemented("reconcile", issue=4)


def warm_up() -> None:
    """Nothing to prepare yet."""
