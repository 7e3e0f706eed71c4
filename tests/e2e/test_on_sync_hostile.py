"""We test these aspects of the webhook's input handling, with hypothesis throwing generated
bodies at the real function over HTTP:

- malformed, wrong-typed, oversized and hostile bodies (path tricks, label and filter
  injection attempts) get a 4xx naming the problem, never a 500;
- nothing is stored for any of them, and the process keeps serving;
- deep nesting, NUL characters, overflowing dates and malformed chunked encoding get a 400;
- a resource entry we cannot use is skipped with a note, never a 400 for the whole sync, and
  RBAC names with ``:`` (``system:...``) are accepted.

``test_on_sync_properties.py`` throws thousands of mutated bodies at the function.
"""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.postgres import Database
from tests.e2e.conftest import HOOK_TOKEN
from tests.e2e.test_on_sync import hook

HOSTILE_NAMES = st.sampled_from(
    [
        "../etc/passwd",
        'shop"+namespace:"kube-system',
        'a","b',
        "shop/../../x",
        "UPPER",
        "-leading",
        "a" * 300,
        "💸",
        "shop\nx",
        "",
        " shop",
        "$(rm -rf /)",
        "label[team]:x",
    ]
)
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
FIELDS = ["app", "appNamespace", "destinationNamespace", "finishedAt", "resources", "revision", "revisions"]


@st.composite
def bad_bodies(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["hostile-name", "wrong-type", "missing", "junk", "resource"]))
    body = hook()
    if kind == "hostile-name":
        body[draw(st.sampled_from(["app", "appNamespace", "destinationNamespace"]))] = draw(HOSTILE_NAMES)
        if body.get("destinationNamespace") == "":
            body["app"] = "../x"  # an empty destination alone is a valid skip, keep the body bad
    elif kind == "wrong-type":
        field = draw(st.sampled_from(FIELDS))
        lists = st.nothing() if field == "resources" else st.lists(st.integers(), min_size=1, max_size=3)
        body[field] = draw(  # a list of junk entries is a valid list whose entries are skipped
            st.integers() | lists | st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=2)
        )
    elif kind == "missing":
        del body[draw(st.sampled_from(["app", "appNamespace", "finishedAt"]))]
    elif kind == "junk":
        return draw(ANY_JSON.filter(lambda v: not isinstance(v, dict) or "app" not in v))
    else:  # bad entries alone are skipped (see below): a bad app name keeps the body bad
        body["resources"] = [{"kind": draw(st.sampled_from(["Deploy ment", "", "../x"])), "name": draw(HOSTILE_NAMES)}]
        body["app"] = draw(HOSTILE_NAMES)
    return body


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bad_bodies())
def test_hostile_bodies_get_4xx_and_store_nothing(on_sync_url: str, db: Database, body: Any) -> None:
    response = httpx.post(on_sync_url, content=json.dumps(body), headers={"Authorization": f"Bearer {HOOK_TOKEN}"})
    assert 400 <= response.status_code < 500, (body, response.status_code, response.text)
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM sync_events").fetchone() == {"n": 0}


def test_oversized_and_non_json_bodies(on_sync_url: str, db: Database) -> None:
    auth = {"Authorization": f"Bearer {HOOK_TOKEN}"}
    big = hook(project="x" * 70_000)
    assert httpx.post(on_sync_url, content=json.dumps(big), headers=auth).status_code == 413
    assert httpx.post(on_sync_url, content=b"\xff\xfe not json", headers=auth).status_code == 400
    assert httpx.post(on_sync_url, json=hook(), headers={"Authorization": "Bearer nope"}).status_code == 401
    assert httpx.post(on_sync_url, json=hook()).status_code == 401
    response = httpx.post(on_sync_url, json=hook(appNamespace="Bad_NS"), headers=auth)
    assert response.status_code == 400 and "appNamespace" in response.json()["error"]
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM sync_events").fetchone() == {"n": 0}


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {HOOK_TOKEN}"}


def test_each_failure_class_that_once_gave_500_gets_400(on_sync_url: str, db: Database) -> None:
    deep = "[" * 1000 + "]" * 1000
    cases = {
        "body": json.dumps(hook()).replace('"app"', f'"extra": {deep}, "app"', 1),
        "project": json.dumps(hook(project="a\u0000b")),
        "finishedAt": json.dumps(hook(finishedAt="9999-12-31T23:59:59-01:00")),
        "app": json.dumps(hook(app="web\n")),
        "revision": json.dumps(hook(revision="abc\n")),
    }
    for field, content in cases.items():
        response = httpx.post(on_sync_url, content=content, headers=_auth())
        assert response.status_code == 400, (field, response.text)
        assert response.json()["error"].startswith(field), (field, response.text)
    event = {"ce-type": "dev.finops.sync.accepted", "ce-id": "x", "ce-source": "/x", "ce-specversion": "1.0"}
    response = httpx.post(on_sync_url, content=f'{{"syncEventId": {deep}}}', headers=event)
    assert response.status_code == 400, response.text
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM sync_events").fetchone() == {"n": 0}


@pytest.mark.parametrize(
    "chunks",
    ["zz\r\n{}\r\n0\r\n\r\n", "2\r\n{}XX0\r\n\r\n", "5\r\n{}"],
    ids=["bad-size", "no-terminator", "cut-short"],
)
def test_malformed_chunked_encoding_gets_400(on_sync_url: str, chunks: str) -> None:
    url = urlsplit(on_sync_url)
    request = (
        f"POST / HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {HOOK_TOKEN}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    ).encode() + chunks.encode()
    with socket.create_connection((url.hostname, url.port), timeout=10) as conn:
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)  # the cut-short body ends here
        answer = b"".join(iter(lambda: conn.recv(4096), b"")).decode(errors="replace")
    assert answer.split(" ", 2)[1] == "400", answer
    assert "body could not be read" in answer, answer


def test_unusable_resources_are_skipped_and_rbac_names_accepted(on_sync_url: str, db: Database) -> None:
    rbac = "rbac.authorization.k8s.io"
    resources = [
        {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
        {
            "group": rbac,
            "version": "v1",
            "kind": "Role",
            "namespace": "shop",
            "name": "cert-manager-webhook:dynamic-serving",
        },
        {"group": rbac, "version": "v1", "kind": "ClusterRole", "name": "system:controller:web"},
        {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web\n"},
        {"group": "a\u0000b", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "cart"},
        {"group": rbac, "version": "v1", "kind": "Role", "namespace": "shop", "name": ".."},
        "not an object",
    ]
    content = json.dumps(hook(resources=resources))  # escapes NUL and newline as JSON does
    response = httpx.post(on_sync_url, content=content, headers=_auth())
    assert response.status_code == 202, response.text
    assert response.json()["resources_skipped"] == 4
    notes = response.json()["resources_skipped_notes"]
    assert [note.split(":")[0].split(".")[0] for note in notes] == [
        "resources[3]",
        "resources[4]",
        "resources[5]",
        "resources[6]",
    ]
    with db.connection() as conn:
        stored = conn.execute("SELECT resources FROM sync_events").fetchone()
    assert stored is not None
    names = [r["name"] for r in stored["resources"]["items"]]
    assert names == ["web", "cert-manager-webhook:dynamic-serving", "system:controller:web"]
