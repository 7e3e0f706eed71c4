"""We test these aspects of the webhook's input handling, with hypothesis throwing generated
bodies at the real function over HTTP:

- malformed, wrong-typed, oversized and hostile bodies (path tricks, label and filter
  injection attempts) get a 4xx naming the problem, never a 500;
- nothing is stored for any of them, and the process keeps serving.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
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
        body[draw(st.sampled_from(FIELDS))] = draw(
            st.integers()
            | st.lists(st.integers(), min_size=1, max_size=3)
            | st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=2)
        )
    elif kind == "missing":
        del body[draw(st.sampled_from(["app", "appNamespace", "finishedAt"]))]
    elif kind == "junk":
        return draw(ANY_JSON.filter(lambda v: not isinstance(v, dict) or "app" not in v))
    else:
        body["resources"] = [{"kind": draw(st.sampled_from(["Deploy ment", "", "../x"])), "name": draw(HOSTILE_NAMES)}]
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
