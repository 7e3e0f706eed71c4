"""We test these aspects of name rules and the ``on_sync`` body's validation, without I/O:

- names are matched whole: a trailing newline never passes (``fullmatch``, not ``match``+``$``);
- each kind has its own rule: RBAC objects take path-segment names (``system:controller:x``),
  everything else a DNS-1123 subdomain;
- a ``resources`` entry we cannot use is skipped with a note, never a validation error;
- NUL and lone surrogates in a stored text, out-of-range dates and over-long revisions are
  refused naming the field; the JSON depth check counts brackets outside strings only, and a
  body is refused from one level past ``MAX_JSON_DEPTH``, the brackets in its strings aside.
"""

from __future__ import annotations

from typing import Any

import flask
import pytest
from werkzeug.test import EnvironBuilder

from finops.applications import parse_application
from finops.errors import InvalidInput
from finops.labels import is_object_name, validate_label_key, validate_namespace, validate_object_name
from functions.edge import MAX_JSON_DEPTH, json_depth, read_json
from functions.on_sync.webhook import SyncWebhook, WebhookInvalid


def body(**extra: Any) -> dict[str, Any]:
    return {"app": "web", "appNamespace": "argocd", "finishedAt": "2026-11-29T10:00:00Z", **extra}


@pytest.mark.parametrize("value", ["shop\n", "shop\r\n", "sh\nop", "Shop", "-shop", "", "a" * 64])
def test_namespaces_are_matched_whole(value: str) -> None:
    with pytest.raises(InvalidInput):
        validate_namespace(value)


@pytest.mark.parametrize("value", ["team\n", "example.com/team\n", "example.com\n/team"])
def test_label_keys_are_matched_whole(value: str) -> None:
    with pytest.raises(InvalidInput):
        validate_label_key(value)


@pytest.mark.parametrize(
    ("kind", "name", "valid"),
    [
        ("Role", "cert-manager-webhook:dynamic-serving", True),
        ("ClusterRole", "system:controller:job-controller", True),
        ("ClusterRoleBinding", "system:Basic User", True),
        ("RoleBinding", "a:b", True),
        ("Role", "..", False),
        ("Role", ".", False),
        ("Role", "a/b", False),
        ("Role", "a%2fb", False),
        ("Role", "a\x00b", False),
        ("Role", "system:x\n", False),
        ("Role", "", False),
        ("Deployment", "web", True),
        ("Deployment", "web.v2", True),
        ("Deployment", "a:b", False),
        ("Deployment", "web\n", False),
        ("Deployment", "Web", False),
        ("Deployment", "a" * 254, False),
    ],
    ids=lambda v: repr(v)[:24] if isinstance(v, str) else str(v),
)
def test_names_follow_their_kind(kind: str, name: str, valid: bool) -> None:
    assert is_object_name(kind, name) is valid
    if not valid:
        with pytest.raises(InvalidInput, match=kind):
            validate_object_name(kind, name)


def test_unusable_resources_are_skipped_with_a_note() -> None:
    hook = SyncWebhook.parse(
        body(
            resources=[
                {"group": "rbac.authorization.k8s.io", "kind": "Role", "name": "webhook:dynamic-serving"},
                {"kind": "Deployment", "name": "web\n"},
                {"kind": "Deployment", "name": "web", "group": "a\x00b"},
                "junk",
                {"kind": "Deployment", "name": "web"},
            ]
        )
    )
    assert [r.name for r in hook.resources or []] == ["webhook:dynamic-serving", "web"]
    assert [note.split(":")[0] for note in hook.skipped] == ["resources[1]", "resources[2].group", "resources[3]"]


def test_a_body_cannot_fill_the_skipped_notes() -> None:
    assert SyncWebhook.parse(body(skipped=["forged"])).skipped == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("app", "web\n"),
        ("appNamespace", "argocd\n"),
        ("destinationNamespace", "shop\n"),
        ("project", "a\x00b"),
        ("syncResult", "Succeeded\x00"),
        ("destinationName", "x\ud800"),
        ("revision", "abc\n"),
        ("revisions", ["a" * 256] * 10),
        ("finishedAt", "9999-12-31T23:59:59-01:00"),
        ("finishedAt", "0001-01-01T00:00:00+01:00"),
        ("finishedAt", "1999-12-31T23:59:59Z"),
        ("finishedAt", "2100-01-01T00:00:00Z"),
    ],
)
def test_unstorable_values_are_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(WebhookInvalid) as caught:
        SyncWebhook.parse(body(**{field: value}))
    assert caught.value.loc[0] == field
    assert caught.value.message.startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("raw", "depth"),
    [
        (b"{}", 1),
        (b'{"a": [[1], {"b": []}]}', 4),
        (b'{"a": "[[[[[[[[", "b": "\\"[[[["}', 1),
        (b"[" * 1000 + b"]" * 1000, 1000),
        (b"1", 0),
    ],
)
def test_json_depth_counts_brackets_outside_strings(raw: bytes, depth: int) -> None:
    assert json_depth(raw) == depth


def _read(raw: bytes) -> Any:
    return read_json(flask.Request(EnvironBuilder(method="POST", data=raw).get_environ()))


@pytest.mark.parametrize("strings", [0, 100], ids=["bare", "with-brackets-in-strings"])
def test_a_body_is_refused_one_level_past_the_depth_limit(strings: int) -> None:
    def nested(depth: int) -> bytes:
        text = b'"' + b"[{" * strings + b'"'
        return b"[" * (depth - 1) + b'{"a": ' + text + b"}" + b"]" * (depth - 1)

    assert _read(nested(MAX_JSON_DEPTH)) is not None
    with pytest.raises(InvalidInput, match=f"nests deeper than {MAX_JSON_DEPTH} levels"):
        _read(nested(MAX_JSON_DEPTH + 1))


def test_the_backfill_skips_resources_it_cannot_use() -> None:
    app = parse_application(
        {
            "metadata": {"name": "web", "namespace": "argocd"},
            "spec": {"destination": {"namespace": "shop"}},
            "status": {
                "resources": [
                    {"kind": "Deployment", "name": "web", "namespace": "shop"},
                    {"kind": "ClusterRole", "name": "system:web"},
                    {"kind": "Deployment", "name": "web\n", "namespace": "shop"},
                    {"kind": "Deployment", "name": 5, "namespace": "shop"},
                    "junk",
                ]
            },
        }
    )
    assert app.resources == (("Deployment", "web"), ("ClusterRole", "system:web"))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "body: Input should be a valid dictionary or instance of SyncWebhook"),
        ({"appNamespace": "argocd", "finishedAt": "2026-11-29T10:00:00Z"}, "app: Field required"),
        (body(app=5), "app: Input should be a valid string"),
        (body(project=5), "project: Input should be a valid string"),
        (body(revisions=["a", 5]), "revisions.1: Input should be a valid string"),
        (body(revisions=[5] * 65), "revisions: List should have at most 64 items after validation, not 65"),
        (body(resources={}), "resources: Input should be a valid list"),
        (
            body(destinationName="x" * 254),
            "destinationName: Value should have at most 253 items after validation, not 254",
        ),
        (body(finishedAt=5), "finishedAt: Value error, must be an RFC 3339 timestamp string"),
        (
            body(app="Web", appNamespace="x y"),
            "app: Value error, 'Web' is not a valid Kubernetes name (DNS-1123 subdomain)",
        ),
    ],
    ids=lambda v: str(v)[:30],
)
def test_a_refused_body_names_its_first_problem_as_pydantic_did(data: object, message: str) -> None:
    with pytest.raises(WebhookInvalid) as caught:
        SyncWebhook.parse(data)
    assert caught.value.message == message
