"""We test that the sandbox API server treats custom resources as a real one does (``sandbox.kube.schema``):

- fields the CRD's schema does not declare are pruned (and recorded), except under
  ``x-kubernetes-preserve-unknown-fields`` and in ``additionalProperties`` maps; ``metadata`` and the
  root ``apiVersion``/``kind`` are the server's; nulls of non-nullable fields are dropped; defaults
  are filled in;
- structural errors (type, nullable, enum, required, min/max, lengths, pattern, formats, int-or-string,
  nested arrays, list-map duplicates) are ``422 Invalid`` Statuses naming every field path;
- the store applies this on create, replace, patch (after patching) and ``/status`` writes, validating
  the whole resulting object; kinds without a CRD (or with a schema-less one) are stored as sent;
- the repository's CRDs accept their own example objects (tests/data/crds) unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.kube import ApiError, KubeStore
from sandbox.kube.resources import ResourceType
from sandbox.kube.schema import CrdSchemas, Pruned, apply_defaults, prune
from sandbox.kube.validation import validate

ROOT = Path(__file__).resolve().parents[2]
GROUP = "example.com"
API = f"{GROUP}/v1"

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "colour": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                "code": {"type": "string", "pattern": "^[A-Z]{3}$", "minLength": 3, "maxLength": 3},
                "ratio": {"type": "number", "nullable": True},
                "port": {"x-kubernetes-int-or-string": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}},
                },
                "parts": {
                    "type": "array",
                    "maxItems": 3,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "ready": {"type": "string"},
                "observedGeneration": {"type": "integer", "format": "int64"},
                "at": {"type": "string", "format": "date-time"},
            },
        },
    },
}


def widget_crd(schema: dict[str, Any] | None = WIDGET_SCHEMA) -> dict[str, Any]:
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}
    if schema is not None:
        version["schema"] = {"openAPIV3Schema": schema}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [version],
        },
    }


def widget(name: str = "w", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "ns", "labels": {"a": "b"}, "annotations": {"x": "y"}},
        "spec": {"size": 3, **spec},
    }


@pytest.fixture
def store() -> KubeStore:
    store = KubeStore()
    store.create(widget_crd())
    return store


@contextmanager
def invalid(*fragments: str) -> Iterator[pytest.ExceptionInfo[ApiError]]:
    with pytest.raises(ApiError) as caught:
        yield caught
    error = caught.value
    assert (error.code, error.reason) == (422, "Invalid"), error.status()
    for fragment in fragments:
        assert fragment in error.message, error.message


# --- pure functions ----------------------------------------------------------------------------------


def test_prune_drops_undeclared_fields_but_keeps_metadata_and_preserved_subtrees() -> None:
    obj = widget(
        junk={"deep": 1},
        labels={"free": "form", "keys": "kept"},
        extra={"anything": {"goes": [1, 2]}, "known": {"a": "x", "b": "pruned"}},
        parts=[{"name": "p", "colour": "pruned", "tags": ["t"]}],
    )
    obj["metadata"]["unknownMeta"] = "left to the server"
    obj["topLevel"] = True
    obj["status"] = {"ready": "True", "stale": 1}
    pruned, dropped = prune(WIDGET_SCHEMA, obj)
    assert [path for path, _ in dropped] == [
        "spec.junk",
        "spec.extra.known.b",
        "spec.parts[0].colour",
        "topLevel",
        "status.stale",
    ]
    assert pruned["metadata"] == obj["metadata"]
    assert pruned["spec"]["labels"] == {"free": "form", "keys": "kept"}
    assert pruned["spec"]["extra"] == {"anything": {"goes": [1, 2]}, "known": {"a": "x"}}
    assert pruned["spec"]["parts"] == [{"name": "p", "tags": ["t"]}]
    assert pruned["status"] == {"ready": "True"}
    assert obj["spec"]["junk"] == {"deep": 1}  # the input is not modified


def test_prune_drops_nulls_of_non_nullable_fields_only() -> None:
    pruned, dropped = prune(WIDGET_SCHEMA, widget(code=None, ratio=None))
    assert "code" not in pruned["spec"] and pruned["spec"]["ratio"] is None and dropped == []


def test_defaults_fill_absent_fields_under_present_parents() -> None:
    assert apply_defaults(WIDGET_SCHEMA, widget())["spec"]["colour"] == "red"
    assert apply_defaults(WIDGET_SCHEMA, widget(colour="blue"))["spec"]["colour"] == "blue"
    assert "spec" not in apply_defaults(WIDGET_SCHEMA, {"metadata": {}})


def messages(obj: dict[str, Any]) -> list[str]:
    return [error.message for error in validate(WIDGET_SCHEMA, obj)]


def test_a_valid_object_has_no_errors() -> None:
    obj = widget(code="ABC", ratio=0.5, port="http", labels={"k": "v"}, parts=[{"name": "a"}, {"name": "b"}])
    obj["status"] = {"ready": "True", "observedGeneration": 2, "at": "2026-11-20T10:00:00Z"}
    assert messages(obj) == []
    assert messages(widget(port=8080, ratio=1)) == []  # an integer is a number


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"status": {"ready": True}},
            'status.ready: Invalid value: "boolean": status.ready in body must be of type string: "boolean"',
        ),
        (
            {"status": {"observedGeneration": "3"}},
            'status.observedGeneration: Invalid value: "string": status.observedGeneration in body must be of type'
            ' integer: "string"',
        ),
        (
            {"status": {"at": "yesterday"}},
            'status.at: Invalid value: "yesterday": status.at in body must be of type date-time: "yesterday"',
        ),
        ({"spec": {"size": 0}}, "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"),
        ({"spec": {"size": 11}}, "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"),
        ({"spec": {"size": 2.5}}, 'spec.size: Invalid value: "number": spec.size in body must be of type integer'),
        (
            {"spec": {"size": 1, "colour": "green"}},
            'spec.colour: Unsupported value: "green": supported values: "red", "blue"',
        ),
        (
            {"spec": {"size": 1, "code": "abc"}},
            "spec.code: Invalid value: \"abc\": spec.code in body should match '^[A-Z]{3}$'",
        ),
        ({"spec": {"size": 1, "code": "AB"}}, 'spec.code: Invalid value: "AB": spec.code in body should be at least 3'),
        ({"spec": {"size": 1, "code": "ABCD"}}, "spec.code: Too long: may not be more than 3 bytes"),
        ({"spec": {"size": 1, "port": 1.5}}, 'spec.port: Invalid value: "number": spec.port in body must be of type'),
        ({"spec": {"size": 1, "labels": {"k": 1}}}, 'spec.labels.k: Invalid value: "integer"'),
        ({"spec": {}}, "spec.size: Required value"),
        ({"spec": "big"}, 'spec: Invalid value: "string": spec in body must be of type object: "string"'),
        (
            {"spec": {"size": 1, "parts": [{"name": "a", "tags": ["x", 7]}]}},
            'spec.parts[0].tags[1]: Invalid value: "integer": spec.parts[0].tags[1] in body must be of type string',
        ),
        ({"spec": {"size": 1, "parts": [{"tags": []}]}}, "spec.parts[0].name: Required value"),
        (
            {"spec": {"size": 1, "parts": [{"name": "a"}, {"name": "a"}]}},
            'spec.parts[1]: Duplicate value: {"name": "a"}',
        ),
        (
            {"spec": {"size": 1, "parts": [{"name": str(i)} for i in range(4)]}},
            "spec.parts: Too many: 4: must have at most 3 items",
        ),
    ],
)
def test_structural_errors_name_the_field(change: dict[str, Any], expected: str) -> None:
    obj = {**widget(), **copy.deepcopy(change)}
    found = messages(obj)
    assert any(expected in message for message in found), found


def test_a_missing_spec_is_required_and_every_error_is_listed() -> None:
    obj = widget(size="big", colour="green")
    assert len(messages(obj)) == 2
    assert messages({"apiVersion": API, "kind": "Widget", "metadata": {"name": "w"}}) == ["spec: Required value"]


# --- the store -----------------------------------------------------------------------------------------


def test_create_prunes_defaults_and_records(store: KubeStore) -> None:
    created = store.create(widget(junk=1), keep_status=False)
    assert created["spec"] == {"size": 3, "colour": "red"}
    assert created["metadata"]["labels"] == {"a": "b"} and created["metadata"]["annotations"] == {"x": "y"}
    assert store.schemas.pruned == [Pruned("Widget", "ns", "w", "spec.junk", 1)]


def test_create_rejects_an_invalid_object_with_the_real_message(store: KubeStore) -> None:
    with invalid('Widget.example.com "w" is invalid: spec.size: Invalid value: 0:') as error:
        store.create(widget(size=0))
    assert error.value.details["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "field": "spec.size",
            "message": "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
        }
    ]
    assert store.get(API, "widgets", "ns", "w") is None
    with invalid('is invalid: [spec.size: Invalid value: "string"', 'spec.colour: Unsupported value: "green"'):
        store.create(widget(size="big", colour="green"))


def test_status_writes_are_pruned_and_validated(store: KubeStore) -> None:
    store.create(widget())
    with invalid('status.ready: Invalid value: "boolean": status.ready in body must be of type string'):
        store.patch(API, "widgets", "ns", "w", {"status": {"ready": True}}, subresource="status")
    patched = store.patch(API, "widgets", "ns", "w", {"status": {"ready": "True", "gen": 1}}, subresource="status")
    assert patched["status"] == {"ready": "True"}
    assert store.schemas.pruned == [Pruned("Widget", "ns", "w", "status.gen", 1, "status")]
    current = store.get(API, "widgets", "ns", "w")
    assert current is not None
    with invalid("status.observedGeneration: Invalid value"):
        store.replace({**current, "status": {"observedGeneration": "1"}}, subresource="status")
    replaced = store.replace(
        {**current, "status": {"observedGeneration": 1}, "spec": {"size": 99}}, subresource="status"
    )
    assert replaced["status"] == {"observedGeneration": 1} and replaced["spec"]["size"] == 3  # spec is not written


def test_main_resource_writes_are_pruned_before_generation_is_computed(store: KubeStore) -> None:
    store.create(widget())
    same = store.patch(API, "widgets", "ns", "w", {"spec": {"unknown": 1}})
    assert same["metadata"]["generation"] == 1 and "unknown" not in same["spec"]
    with invalid("spec.size: Invalid value: 0"):
        store.patch(
            API,
            "widgets",
            "ns",
            "w",
            [{"op": "replace", "path": "/spec/size", "value": 0}],
            content_type="application/json-patch+json",
        )
    current = store.get(API, "widgets", "ns", "w")
    assert current is not None
    with invalid("spec.colour: Unsupported value"):
        store.replace({**current, "spec": {"size": 2, "colour": "green"}})
    bigger = store.replace({**current, "spec": {"size": 4}, "status": {"ready": True}})  # status is ignored
    assert bigger["spec"] == {"size": 4, "colour": "red"} and bigger["metadata"]["generation"] == 2
    assert [p.path for p in store.schemas.pruned] == ["spec.unknown"]


def test_seeded_manifests_are_validated_status_included() -> None:
    store = KubeStore()
    bad = {**widget(), "status": {"ready": False}}
    with invalid("status.ready"):
        store.apply_manifests([bad, widget_crd()])  # the CRD goes first whatever its position
    store.apply_manifests([{**widget(), "status": {"ready": "True", "seeded": 1}}, widget_crd()])
    assert [p.path for p in store.schemas.pruned] == ["status.seeded"]
    with invalid("status.ready"):
        store.apply_manifests([bad])
    store.apply_manifests([{**widget(), "status": {"ready": "False", "zzz": 1}}])
    stored = store.get(API, "widgets", "ns", "w")
    assert stored is not None and stored["status"] == {"ready": "False"}
    assert [p.path for p in store.schemas.pruned] == ["status.seeded", "status.zzz"]


def test_kinds_without_a_crd_schema_stay_lenient() -> None:
    store = KubeStore()
    store.create(widget_crd(schema=None))
    store.create({**widget(size="anything", junk=1), "status": {"ready": True}})
    other = {"apiVersion": "other.io/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"x": None}}
    store.create(other)
    assert store.patch("other.io/v1", "gadgets", None, "g", {"status": {"ready": True}}, subresource="status")
    assert store.schemas.pruned == [] and not store.schemas.governs(ResourceType(GROUP, "Widget", "widgets", True))


def test_deleting_the_crd_turns_validation_off(store: KubeStore) -> None:
    store.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, f"widgets.{GROUP}")
    store.create(widget(size=0))


def test_schemas_pick_the_version_written() -> None:
    schemas = CrdSchemas()
    crd = widget_crd()
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    crd["spec"]["versions"].append(
        {"name": "v2", "served": True, "storage": False, "schema": {"openAPIV3Schema": loose}}
    )
    schemas.register(crd)
    resource = ResourceType(GROUP, "Widget", "widgets", True)
    assert schemas.schema_for(resource, "v2") == loose
    assert schemas.schema_for(resource, "v9") == WIDGET_SCHEMA  # an unknown version: the storage one
    assert schemas.errors(resource, "v2", widget(size=0)) == []
    assert schemas.errors(resource, None, widget(size=0))  # the object's own apiVersion: v1


# --- the repository's CRDs -------------------------------------------------------------------------------


def load_yaml(path: Path) -> list[dict[str, Any]]:
    # kubectl keeps timestamps as strings: use the base loader's scalars for them
    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return [doc for doc in yaml.load_all(path.read_text(), Loader=Loader) if doc]


def repository_crds() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted((ROOT / "knative" / "crds").glob("*.yaml"))
        for doc in load_yaml(path)
        if doc.get("kind") == "CustomResourceDefinition"
    ]


def test_the_repository_crds_accept_their_examples_unchanged() -> None:
    store = KubeStore()
    store.apply_manifests(repository_crds())
    examples = load_yaml(ROOT / "tests" / "data" / "crds" / "examples.yaml")
    assert examples
    for index, doc in enumerate(examples):
        doc = copy.deepcopy(doc)
        doc["metadata"]["name"] = f"{doc['metadata']['name']}-{index}"  # examples may share names
        if doc["kind"] == "FinOpsProvider":
            if store.get(doc["apiVersion"], "FinOpsProvider", None, "default") is not None:
                store.delete(doc["apiVersion"], "FinOpsProvider", None, "default")
            doc["metadata"]["name"] = "default"
        store.create(doc)
    assert store.schemas.pruned == []
