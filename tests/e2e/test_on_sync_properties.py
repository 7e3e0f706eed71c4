"""We test these aspects of the webhook's validation being total, with hypothesis posting
over a thousand generated bodies to the real ``on_sync`` served by functions-framework:

- every body gets a 2xx or a 4xx, never a 5xx: valid bodies mutated field by field with hostile
  values (deep nesting, NUL, lone surrogates, newline-suffixed names, overflowing and
  out-of-range dates, wrong types, unicode, RBAC names with ``:``);
- an unmutated body is accepted (202 when its sync Succeeded, else 200), whatever its
  ``resources`` hold: an entry we cannot use is skipped and counted, never a 400;
- nothing invalid is stored: every row of ``sync_events`` has names that fullmatch the
  Kubernetes rules (checked here by an oracle of our own, not by the code under test), no NUL.

The function runs with a dead ``K_SINK``, so an accepted event is stored but not measured.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.postgres import Database
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import HOOK_TOKEN

EXAMPLES = 1000
MAX_EXAMPLES = 1200  # hypothesis may stop a little short of max_examples
DEEP = "__deep__"  # replaced in the JSON text by 1,000 nested arrays (json.dumps would recurse)
SHALLOW = "__shallow__"  # 30 nested arrays: within the limit, so harmless in an extra field

# The oracle: Kubernetes' rules written out independently of finops/labels.py.
LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
SUBDOMAIN = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
RBAC_KINDS = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}

NAMES = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?", fullmatch=True)
RBAC_NAMES = st.one_of(
    NAMES.map(lambda n: f"system:controller:{n}"),
    NAMES.map(lambda n: f"{n}-webhook:dynamic-serving"),
    st.just("system:aggregate-to-view"),
    NAMES.map(lambda n: f"{n}:Upper Case ok"),
)
OFFSETS = st.integers(min_value=-23 * 60, max_value=23 * 60).map(lambda m: timezone(timedelta(minutes=m)))
GOOD_DATES = st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2099, 1, 1), timezones=OFFSETS)
ANY_DATES = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59), timezones=OFFSETS)
HOSTILE = st.one_of(
    st.sampled_from(
        [
            "shop\n",
            "web\n",
            "a\x00b",
            "\x00",
            "\ud800",
            "x\udfffy",
            "..",
            ".",
            "a/b",
            "a%2fb",
            "UPPER",
            "-x",
            "x" * 254,
            "x" * 64,
            "",
            " ",
            "💸",
            "system:masters",
            "9999-12-31T23:59:59-01:00",
            "0001-01-01T00:00:00+01:00",
            "99999-01-01T00:00:00Z",
            "2026-11-29T10:00:00",
            "2026-13-01T00:00:00Z",
            DEEP,
            SHALLOW,
        ]
    ),
    NAMES.map(lambda n: n + "\n"),
    NAMES.map(lambda n: n + "\x00"),
    RBAC_NAMES,
    ANY_DATES.map(datetime.isoformat),
    st.text(max_size=20),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
TOP_FIELDS = [
    "app",
    "appNamespace",
    "project",
    "destinationNamespace",
    "destinationServer",
    "destinationName",
    "syncResult",
    "revision",
    "revisions",
    "finishedAt",
    "resources",
]


@st.composite
def resource_entries(draw: st.DrawFn) -> tuple[Any, bool]:
    """One ``resources`` entry and whether it was made hostile."""
    kind = draw(st.sampled_from(["good", "good", "rbac", "rbac", "hostile"]))
    if kind == "rbac":
        rbac_kind = draw(st.sampled_from(sorted(RBAC_KINDS)))
        entry = {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": rbac_kind, "name": draw(RBAC_NAMES)}
        if rbac_kind in {"Role", "RoleBinding"}:
            entry["namespace"] = "shop"
        return entry, False
    entry = {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": draw(NAMES)}
    if kind == "good":
        return entry, False
    if draw(st.booleans()):
        return draw(HOSTILE), True
    entry[draw(st.sampled_from(sorted(entry)))] = draw(HOSTILE)
    return entry, True


@st.composite
def bodies(draw: st.DrawFn) -> tuple[Any, str]:
    """A body and what it must get: ``202``, ``2xx``, ``400`` or ``any`` (a 2xx or a 4xx)."""
    entries = draw(st.lists(resource_entries(), max_size=5))
    succeeded = draw(st.integers(0, 9)) < 6
    body: dict[str, Any] = {
        "app": draw(NAMES.filter(lambda n: n != "cost-gate")),
        "appNamespace": draw(st.sampled_from(["argocd", "team-apps"])),
        "project": draw(st.sampled_from(["default", "platform.team", None])),
        "destinationNamespace": "shop",
        "destinationServer": draw(st.sampled_from(["https://kubernetes.default.svc", ""])),
        "destinationName": draw(st.sampled_from(["", "in-cluster"])),
        "syncResult": "Succeeded" if succeeded else draw(st.sampled_from(["Failed", "Running", "Error"])),
        "revision": draw(st.from_regex(r"[0-9a-f]{7,40}", fullmatch=True)),
        "revisions": draw(st.none() | st.lists(st.from_regex(r"v?[0-9]\.[0-9]{1,2}", fullmatch=True), max_size=3)),
        "finishedAt": draw(GOOD_DATES).isoformat(),
        "resources": [entry for entry, _ in entries],
    }
    if body["revisions"] == []:
        body["revisions"] = None
    expected = "202" if succeeded else "2xx"
    shape = draw(st.sampled_from(["as-is", "as-is", "fields", "fields", "fields", "extra", "junk"]))
    if shape == "fields":
        for field in draw(st.lists(st.sampled_from([*TOP_FIELDS, "-delete"]), min_size=1, max_size=3)):
            if field == "-delete":
                body.pop(draw(st.sampled_from(TOP_FIELDS)), None)
            else:
                body[field] = draw(HOSTILE)
        expected = "any"
    elif shape == "extra":
        value = draw(HOSTILE)
        body[draw(st.text(max_size=10).filter(lambda k: k not in body))] = value
        expected = "400" if value == DEEP else expected
    elif shape == "junk":
        return draw(HOSTILE | st.lists(HOSTILE, max_size=3)), "any"
    if DEEP in json.dumps(body):
        expected = "400"
    return body, expected


def to_json(body: Any) -> str:
    return json.dumps(body).replace(f'"{DEEP}"', "[" * 1000 + "]" * 1000).replace(f'"{SHALLOW}"', "[" * 30 + "]" * 30)


def valid_row(row: dict[str, Any]) -> bool:
    """Whether a stored ``sync_events`` row obeys the rules (the oracle)."""
    texts = [row["app_namespace"], row["app_name"], row["project"] or "", row["destination_namespace"], row["revision"]]
    items = row["resources"]["items"]
    return (
        bool(LABEL.match(row["app_namespace"]))
        and bool(SUBDOMAIN.match(row["app_name"]))
        and (row["project"] is None or bool(SUBDOMAIN.match(row["project"])))
        and bool(LABEL.match(row["destination_namespace"]))
        and re.match(r"[\x21-\x7e,]*\Z", row["revision"]) is not None
        and datetime(2000, 1, 1, tzinfo=UTC) <= row["finished_at"] < datetime(2100, 1, 1, tzinfo=UTC)
        and all(valid_resource(item) for item in items)
        and not any("\x00" in text for text in texts)
    )


def valid_resource(item: dict[str, str]) -> bool:
    name, kind = item["name"], item["kind"]
    if kind in RBAC_KINDS:
        name_ok = name not in {".", ".."} and re.match(r"[^/%\x00-\x1f\x7f]{1,253}\Z", name) is not None
    else:
        name_ok = bool(SUBDOMAIN.match(name))
    return (
        name_ok
        and re.match(r"[A-Za-z][A-Za-z0-9]{0,62}\Z", kind) is not None
        and (item["namespace"] == "" or bool(LABEL.match(item["namespace"])))
        and (item["group"] == "" or bool(SUBDOMAIN.match(item["group"])))
        and (item["version"] == "" or bool(LABEL.match(item["version"])))
        and "\x00" not in json.dumps(item)
    )


@pytest.fixture(scope="module")
def quiet_on_sync_url(stack: Stack) -> Iterator[str]:
    """``on_sync`` whose ``K_SINK`` is dead: accepted events are stored, never measured."""
    with serve_function(
        replace(stack), "on_sync", WEBHOOK_TOKEN=HOOK_TOKEN, K_SINK="http://127.0.0.1:9/", THREADS="8"
    ) as url:
        yield url


def test_every_body_gets_2xx_or_4xx_and_nothing_invalid_is_stored(quiet_on_sync_url: str, db: Database) -> None:
    seen: Counter[str] = Counter()
    started = time.monotonic()
    headers = {"Authorization": f"Bearer {HOOK_TOKEN}", "Content-Type": "application/json"}
    with httpx.Client(headers=headers, timeout=30) as client:

        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(case=bodies())
        def post(case: tuple[Any, str]) -> None:
            body, expected = case
            response = client.post(quiet_on_sync_url, content=to_json(body))
            status = response.status_code
            seen[str(status)] += 1
            context = (body if len(to_json(body)) < 3000 else "(deep)", status, response.text[:500])
            assert status < 500, context
            assert 200 <= status < 300 or 400 <= status < 500, context
            if expected == "202":
                assert status == 202, context
            elif expected == "2xx":
                assert status in (200, 202), context
            elif expected == "400":
                assert status == 400, context
            if expected in ("202", "2xx") and status == 202:
                hostile = sum(
                    1 for entry in body["resources"] if not isinstance(entry, dict) or entry_is_hostile(entry)
                )
                assert response.json().get("resources_skipped", 0) <= hostile, context
                if hostile == 0:
                    assert "resources_skipped" not in response.json(), context

        post()

    with db.connection() as conn:
        rows = conn.execute("SELECT * FROM sync_events").fetchall()
    bad = [row for row in rows if not valid_row(row)]
    assert not bad, bad[:3]
    total = sum(seen.values())
    print(f"\n{total} bodies in {time.monotonic() - started:.1f} s: {dict(seen)}; {len(rows)} events stored")
    assert total >= EXAMPLES
    assert seen["202"] >= total // 5, seen  # a good share reached the storing path
    assert sum(n for status, n in seen.items() if status.startswith("4")) >= total // 5, seen
    assert len(rows) > 0


def entry_is_hostile(entry: dict[str, Any]) -> bool:
    """An entry the oracle would not store (the generator's hostile values may still be valid)."""
    try:
        return not valid_resource(
            {
                "group": entry.get("group", ""),
                "version": entry.get("version", ""),
                "kind": entry["kind"],
                "namespace": entry.get("namespace", ""),
                "name": entry["name"],
            }
        )
    except (KeyError, TypeError):
        return True
