"""We test these aspects of the CloudEvent paths, against the real served functions:

- with ``EVENT_TOKEN`` set, ``on_sync``'s ``dev.finops.sync.accepted`` deliveries and every
  ``reconcile`` event need it (the ``token`` query parameter of the delivery URL, or a bearer):
  without it or with a wrong one, 401 before the body is looked at; the webhook keeps its own
  token;
- a ``reconcile`` POST that is not an event (a full pass) needs the ``PING_TOKEN`` bearer;
- deliveries beyond ``EVENTS_BURST`` (refilled at ``EVENTS_PER_SECOND``) get 429 with
  ``Retry-After``, which the Broker and the ApiServerSource retry;
- the event token never appears in an answer or in the function's log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import HOOK_TOKEN, TOKEN

EVENT_TOKEN = "evt-Kx31p-secret"
SYNC_EVENT = {"ce-type": "dev.finops.sync.accepted", "ce-id": "1", "ce-source": "/t", "ce-specversion": "1.0"}
REF_EVENT = {"ce-type": "dev.knative.apiserver.ref.update", "ce-id": "1", "ce-source": "/t", "ce-specversion": "1.0"}


@pytest.fixture(scope="module")
def guarded_on_sync(stack: Stack) -> Iterator[str]:
    with serve_function(
        stack, "on_sync", WEBHOOK_TOKEN=HOOK_TOKEN, EVENT_TOKEN=EVENT_TOKEN, EVENTS_BURST="4", EVENTS_PER_SECOND="0.01"
    ) as url:
        yield url


@pytest.fixture(scope="module")
def guarded_reconcile(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "reconcile", EVENT_TOKEN=EVENT_TOKEN, EVENTS_BURST="2", EVENTS_PER_SECOND="0.01") as url:
        yield url


def test_on_sync_events_need_the_event_token_and_are_rate_limited(guarded_on_sync: str, stack: Stack) -> None:
    bad_body = {"syncEventId": "not a number"}  # 400 once authenticated: no database work
    answers = [
        httpx.post(guarded_on_sync, json=bad_body, headers=SYNC_EVENT),
        httpx.post(guarded_on_sync + "/?token=wrong", json=bad_body, headers=SYNC_EVENT),
        httpx.post(guarded_on_sync, json=bad_body, headers={**SYNC_EVENT, "Authorization": f"Bearer {HOOK_TOKEN}"}),
    ]
    assert [a.status_code for a in answers] == [401, 401, 401], [a.text for a in answers]
    accepted = [
        httpx.post(guarded_on_sync + f"/?token={EVENT_TOKEN}", json=bad_body, headers=SYNC_EVENT),
        httpx.post(guarded_on_sync, json=bad_body, headers={**SYNC_EVENT, "Authorization": f"Bearer {EVENT_TOKEN}"}),
    ]
    assert [a.status_code for a in accepted] == [400, 400], [a.text for a in accepted]
    statuses = [
        httpx.post(guarded_on_sync + f"/?token={EVENT_TOKEN}", json=bad_body, headers=SYNC_EVENT) for _ in range(4)
    ]
    assert [a.status_code for a in statuses] == [400, 400, 429, 429], [a.text for a in statuses]
    assert int(statuses[-1].headers["Retry-After"]) >= 1
    # The webhook is authenticated by its own token, not rate-limited as an event.
    assert httpx.post(guarded_on_sync, json={}, headers={"Authorization": f"Bearer {EVENT_TOKEN}"}).status_code == 401
    for answer in [*answers, *accepted, *statuses]:
        assert EVENT_TOKEN not in answer.text
    assert EVENT_TOKEN not in (stack.log_dir / "on_sync.log").read_text(errors="replace")


def test_reconcile_needs_a_token_for_a_full_pass_and_for_events(guarded_reconcile: str, stack: Stack) -> None:
    assert httpx.post(guarded_reconcile, json={}).status_code == 401
    assert httpx.post(guarded_reconcile, json={}, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert httpx.post(guarded_reconcile, json={}, headers=REF_EVENT).status_code == 401
    assert httpx.post(guarded_reconcile + "/?token=nope", json={}, headers=REF_EVENT).status_code == 401
    ref = {"kind": "Subscription", "namespace": "team-x", "name": "nope", "apiVersion": "finops.stakater.com/v1alpha1"}
    first = httpx.post(guarded_reconcile + f"/?token={EVENT_TOKEN}", json=ref, headers=REF_EVENT, timeout=30)
    assert first.status_code not in (401, 429), first.text
    httpx.post(guarded_reconcile + f"/?token={EVENT_TOKEN}", json=ref, headers=REF_EVENT, timeout=30)
    limited = httpx.post(guarded_reconcile + f"/?token={EVENT_TOKEN}", json=ref, headers=REF_EVENT, timeout=30)
    assert limited.status_code == 429 and "Retry-After" in limited.headers, limited.text
    full = httpx.post(guarded_reconcile, json={}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert full.status_code not in (401, 429), full.text
    assert EVENT_TOKEN not in Path(stack.log_dir / "reconcile.log").read_text(errors="replace")
