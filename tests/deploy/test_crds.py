"""We test these aspects of the finops.stakater.com/v1alpha1 CRDs in knative/crds:

- each file is a well-formed ``apiextensions.k8s.io/v1`` CRD: name, group, scope, one served and
  stored version, a status subresource, a structural schema whose defaults, enums and patterns are
  consistent, printer columns that point into the schema; the kustomization lists them all;
- every CEL rule (``x-kubernetes-validations``) compiles and is evaluated *as written in the CRD*
  by a real CEL implementation (``common-expression-language``), including ``oldSelf`` for the
  transition rules, with the messages the operator documents;
- a small admission model of the API server (defaults, then a structural schema check, then the
  CEL rules, then ``oldSelf`` on update) accepts the example objects in tests/data/crds and the
  repository's own manifests (sandbox/demo/kube, tests/data/kube), and rejects invalid ones with
  the expected message;
- every CEL rule message is produced by at least one case here, so no rule goes untested.

The admission model follows the API server where it matters here: defaults are applied before
validation; unknown fields are errors (``kubectl apply`` validates strictly); a type error skips
the CEL rules; a rule that reads ``oldSelf`` runs only on update and only where the old object has
a value at the same path; root rules see only ``metadata.name`` and ``metadata.generateName``.
YAML timestamps stay strings, as they do for kubectl.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import cel
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "knative" / "crds"
EXAMPLES = ROOT / "tests" / "data" / "crds" / "examples.yaml"
REPO_MANIFESTS = [
    ROOT / "sandbox" / "demo" / "kube" / "pricebooks.yaml",
    ROOT / "sandbox" / "demo" / "kube" / "costjobs.yaml",
    ROOT / "tests" / "data" / "kube" / "pricebooks.yaml",
    ROOT / "tests" / "data" / "kube" / "costjobs.yaml",
]
GROUP, VERSION = "finops.stakater.com", "v1alpha1"
KINDS = {
    "PriceBook": ("pricebooks", "Namespaced"),
    "Offering": ("offerings", "Namespaced"),
    "Subscription": ("subscriptions", "Namespaced"),
    "CostJob": ("costjobs", "Namespaced"),
    "FinOpsProvider": ("finopsproviders", "Cluster"),
}
DELETE = object()  # a mutation value that removes the key

# The rules' messages (reference/webhooks.md of the operator's docs quotes all but two; see the last test).
IMMUTABLE = "offering spec is immutable"
PERIOD = (
    "period must be a Go duration (e.g. '1h') for ActivatedAt alignment, or a plain integer for boundary alignments"
)
ZERO_PERIOD = "period must be greater than zero"
ABSOLUTE = "absoluteMicros must be >= 0"
FACTOR = "factorMilli must be >= 0"
PARENT_PRESENCE = "parent is immutable (it cannot be added or removed); create a new Subscription instead"
PARENT_VALUE = "parent is immutable; create a new Subscription instead"
OFFERING_REF = "offeringRef is immutable; create a new Subscription instead"
PROVIDER_NAME = "FinOpsProvider must be named 'default' (singleton)."
PROVIDER_ANY = "At least one provider option (awsoptions, gcpoptions, azureoptions, onpremoptions) must be set"
PROVIDER_ONE = "Exactly one provider option (awsoptions, gcpoptions, azureoptions, onpremoptions) must be set"
USAGE_SOURCE = "at least one of resourceType, name, or namespace must be set"
MARGINS_BOTH = "absoluteMicros and factorMilli are mutually exclusive — set only one"
TYPE_ERROR = "Invalid type"


class _KubectlLoader(yaml.SafeLoader):
    """PyYAML's safe loader without the timestamp resolver: kubectl keeps timestamps as strings."""


_KubectlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_all(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.load_all(path.read_text(), Loader=_KubectlLoader) if doc]


CRDS: dict[str, dict[str, Any]] = {}
for _path in sorted(CRD_DIR.glob("*.yaml")):
    for _doc in load_all(_path):
        if _doc["kind"] == "CustomResourceDefinition":
            CRDS[_doc["spec"]["names"]["kind"]] = _doc
CRD_FILES = {kind: CRD_DIR / f"{plural}.yaml" for kind, (plural, _scope) in KINDS.items()}


def schema_of(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = CRDS[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def walk(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema node with its path (``[]`` for items, ``{}`` for additionalProperties)."""
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from walk(sub, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), Mapping):
        yield from walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from walk(schema["additionalProperties"], f"{path}{{}}")


def all_rules() -> list[tuple[str, str, str, str]]:
    """(kind, schema path, rule, message) for every CEL rule of every CRD."""
    return [
        (kind, path, item["rule"], item["message"])
        for kind in sorted(CRDS)
        for path, node in walk(schema_of(kind))
        for item in node.get("x-kubernetes-validations", [])
    ]


@functools.cache
def program(rule: str) -> Any:
    return cel.compile(rule)


def rule_by_message(kind: str, message: str) -> str:
    (rule,) = [r for k, _p, r, m in all_rules() if k == kind and m == message]
    return rule


# --- the admission model -------------------------------------------------------------------------


def apply_defaults(schema: Mapping[str, Any], value: Any) -> Any:
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if value.get(name, DELETE) is None and not sub.get("nullable"):
                del value[name]  # nulls of non-nullable fields are pruned before defaulting
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                apply_defaults(sub, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for item in value.values():
                apply_defaults(extra, item)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            apply_defaults(schema["items"], item)
    return value


_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}
_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


class TypeErrorFound(Exception):
    """A type error: the API server then skips the CEL rules."""


def schema_errors(schema: Mapping[str, Any], value: Any, path: str, *, root: bool = False) -> list[str]:
    errors: list[str] = []
    where = path or "<root>"
    if schema.get("x-kubernetes-int-or-string"):
        if not (_TYPES["integer"](value) or _TYPES["string"](value)):
            raise TypeErrorFound(f"{where}: Invalid type: must be an integer or a string")
    elif "type" in schema and not _TYPES[schema["type"]](value):
        raise TypeErrorFound(f"{where}: Invalid type: must be {schema['type']}, got {type(value).__name__}")
    if "anyOf" in schema and not any(_TYPES[branch["type"]](value) for branch in schema["anyOf"]):
        errors.append(f"{where}: must match one of anyOf")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: Unsupported value: {value!r}: supported values: {schema['enum']}")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: Invalid value: {value!r}: should match '{schema['pattern']}'")
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: Invalid value: should be at least {schema['minLength']} chars long")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where}: Too long: may not be more than {schema['maxLength']} bytes")
        if schema.get("format") == "date-time" and not _is_rfc3339(value):
            errors.append(f"{where}: Invalid value: {value!r}: must be a date-time (RFC 3339)")
    if _TYPES["integer"](value):
        low, high = _RANGES.get(schema.get("format", ""), (None, None))
        if low is not None and high is not None and not low <= value <= high:
            errors.append(f"{where}: Invalid value: {value}: out of {schema['format']} range")
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: Invalid value: {value}: should be greater than or equal to {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: Invalid value: {value}: should be less than or equal to {schema['maximum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: Invalid value: should have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{where}: Too many: {len(value)}: must have at most {schema['maxItems']} items")
        for index, item in enumerate(value):
            errors += schema_errors(schema.get("items") or {}, item, f"{path}[{index}]")
        if schema.get("x-kubernetes-list-type") == "map":
            names = schema["x-kubernetes-list-map-keys"]
            keys = [tuple(item.get(k) for k in names) for item in value]
            for duplicate in sorted({k for k in keys if keys.count(k) > 1}, key=str):
                errors.append(f"{where}: Duplicate value: {dict(zip(names, duplicate, strict=True))}")
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path + '.' if path else ''}{name}: Required value")
        for name, item in value.items():
            child = f"{path}.{name}" if path else name
            if name in properties:
                if root and name == "metadata":
                    continue  # ObjectMeta is validated by the API server itself
                errors += schema_errors(properties[name], item, child)
            elif isinstance(extra, Mapping):
                errors += schema_errors(extra, item, child)
            elif properties and not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f'{child}: unknown field "{child}"')
    return errors


def _is_rfc3339(value: str) -> bool:
    if not _RFC3339.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


def cel_errors(schema: Mapping[str, Any], new: Any, old: Any, path: str) -> list[str]:
    """Messages of the failing CEL rules, walking ``new`` with ``old`` correlated where it exists."""
    errors: list[str] = []
    where = path or "<root>"
    self_value = new
    old_value = old
    if not path:  # root rules may read metadata.name and metadata.generateName only
        self_value = {**new, "metadata": _visible_metadata(new.get("metadata"))}
        old_value = None if old is None else {**old, "metadata": _visible_metadata(old.get("metadata"))}
    for item in schema.get("x-kubernetes-validations", []):
        compiled = program(item["rule"])
        context = {"self": self_value}
        if "oldSelf" in compiled.variables():
            if old is None:
                continue  # a transition rule: update only, and only where there is an old value
            context["oldSelf"] = old_value
        try:
            result = compiled.execute(context)
        except Exception as exc:  # an evaluation error rejects the object, as on the API server
            errors.append(f"{where}: Invalid value: rule {item['rule']!r} did not evaluate: {exc}")
            continue
        if result is not True:
            errors.append(f"{where}: Invalid value: {item['message']}")
    if isinstance(new, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name, item in new.items():
            sub = properties.get(name, extra if isinstance(extra, Mapping) else None)
            if sub is None:
                continue
            before = old.get(name) if isinstance(old, dict) else None
            errors += cel_errors(sub, item, before, f"{path}.{name}" if path else name)
    elif isinstance(new, list) and isinstance(schema.get("items"), Mapping):
        keys = schema.get("x-kubernetes-list-map-keys") if schema.get("x-kubernetes-list-type") == "map" else None
        previous = {}
        if keys and isinstance(old, list):  # only map lists correlate items with the old object
            previous = {tuple(o.get(k) for k in keys): o for o in old if isinstance(o, dict)}
        for index, item in enumerate(new):
            before = previous.get(tuple(item.get(k) for k in keys)) if keys and isinstance(item, dict) else None
            errors += cel_errors(schema["items"], item, before, f"{path}[{index}]")
    return errors


def _visible_metadata(meta: Any) -> dict[str, Any]:
    meta = meta if isinstance(meta, dict) else {}
    return {k: meta[k] for k in ("name", "generateName") if k in meta}


def admit(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[str]:
    """The errors the API server would answer a create (``old`` None) or an update with."""
    kind = obj.get("kind")
    if obj.get("apiVersion") != f"{GROUP}/{VERSION}" or kind not in CRDS:
        return [f"no CRD here serves {obj.get('apiVersion')} {kind}"]
    schema = schema_of(str(kind))
    new = apply_defaults(schema, copy.deepcopy(dict(obj)))
    before = None if old is None else apply_defaults(schema, copy.deepcopy(dict(old)))
    if not (new.get("metadata") or {}).get("name"):
        return ["metadata.name: Required value"]
    try:
        errors = schema_errors(schema, new, "", root=True)
    except TypeErrorFound as exc:
        return [str(exc), "some validation rules were not checked because the object was invalid"]
    return errors + cel_errors(schema, new, before, "")


def defaulted(obj: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = apply_defaults(schema_of(str(obj["kind"])), copy.deepcopy(dict(obj)))
    return result


# --- examples and mutations ----------------------------------------------------------------------

EXAMPLE_DOCS = load_all(EXAMPLES)


def example_key(doc: Mapping[str, Any]) -> str:
    meta = doc["metadata"]
    return f"{doc['kind']}/{(meta.get('labels') or {}).get('example', meta['name'])}"


EXAMPLE_BY_KEY = {example_key(doc): doc for doc in EXAMPLE_DOCS}


def example(key: str, changes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A copy of an example with ``changes`` ({"spec.a.0.b": value or DELETE}) applied."""
    obj = copy.deepcopy(EXAMPLE_BY_KEY[key])
    for dotted, value in (changes or {}).items():
        *parents, last = dotted.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if isinstance(node, list):
            node[int(last)] = value
        elif value is DELETE:
            del node[last]
        else:
            node[last] = value
    return obj


def messages(errors: list[str]) -> list[str]:
    return [e.split(": Invalid value: ", 1)[1] for e in errors if ": Invalid value: " in e]


# --- the CRDs themselves -------------------------------------------------------------------------


def test_every_kind_has_its_file_and_nothing_else_is_here() -> None:
    assert set(CRDS) == set(KINDS)
    for kind, path in CRD_FILES.items():
        assert [d["spec"]["names"]["kind"] for d in load_all(path)] == [kind]
    kustomization = yaml.safe_load((CRD_DIR / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in CRD_FILES.values())


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_crd_identity(kind: str) -> None:
    crd = CRDS[kind]
    plural, scope = KINDS[kind]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == f"{plural}.{GROUP}"
    assert crd["spec"]["group"] == GROUP
    assert crd["spec"]["scope"] == scope
    names = crd["spec"]["names"]
    assert names == {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == (VERSION, True, True)
    assert version["subresources"] == {"status": {}}
    assert schema_of(kind)["required"] == ["spec"]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_schema_is_structural_and_consistent(kind: str) -> None:
    for path, node in walk(schema_of(kind)):
        assert "type" in node or node.get("x-kubernetes-int-or-string"), f"{kind} {path}: no type"
        if "properties" in node:
            assert node["type"] == "object", f"{kind} {path}"
            assert set(node.get("required", [])) <= set(node["properties"]), f"{kind} {path}: required"
        if node.get("type") == "array":
            assert isinstance(node.get("items"), Mapping), f"{kind} {path}: items"
        if node.get("x-kubernetes-list-type") == "map":
            items = node["items"]
            for key in node["x-kubernetes-list-map-keys"]:
                assert key in items.get("required", []) or "default" in items["properties"][key], f"{kind} {path}"
        if "pattern" in node:
            re.compile(node["pattern"])
        for value in node.get("enum", []):
            assert _TYPES[node["type"]](value), f"{kind} {path}: enum value {value!r}"
        if "default" in node:
            assert schema_errors(node, node["default"], path) == [], f"{kind} {path}: default"
    metadata = schema_of(kind)["properties"]["metadata"]
    assert metadata == {"type": "object"}  # the API server owns ObjectMeta


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_printer_columns_point_into_the_schema(kind: str) -> None:
    schema = schema_of(kind)
    paths = {path: node for path, node in walk(schema)}
    for column in CRDS[kind]["spec"]["versions"][0].get("additionalPrinterColumns", []):
        path = column["jsonPath"].lstrip(".")
        if path == "metadata.creationTimestamp":
            assert column["type"] == "date"
            continue
        assert path in paths, f"{kind} column {column['name']}: {path}"
        node = paths[path]
        expected = "date" if node.get("format") == "date-time" else node["type"]
        assert column["type"] == expected, f"{kind} column {column['name']}"
    for field in CRDS[kind]["spec"]["versions"][0].get("selectableFields", []):
        assert paths[field["jsonPath"].lstrip(".")]["type"] == "string"


@pytest.mark.parametrize(("kind", "path", "rule", "message"), all_rules(), ids=lambda v: str(v)[:40])
def test_every_rule_compiles_and_reads_only_self_and_old_self(kind: str, path: str, rule: str, message: str) -> None:
    assert set(program(rule).variables()) <= {"self", "oldSelf"}
    assert message.strip() == message and "\n" not in message


def test_crds_pass_kubernetes_own_schema() -> None:
    import kubernetes_validate

    for kind in sorted(CRDS):
        kubernetes_validate.validate(CRDS[kind], "1.33", strict=True)


# --- the CEL rules, evaluated directly as written -----------------------------------------------


@pytest.mark.parametrize(
    ("alignment", "period", "accepted"),
    [
        ("ActivatedAt", "1h", True),
        ("ActivatedAt", "90m", True),
        ("ActivatedAt", "3600s", True),
        ("ActivatedAt", "1h30m", False),
        ("ActivatedAt", "1", False),
        ("ActivatedAt", "1d", False),
        ("ActivatedAt", "1.5h", False),
        ("HourBoundary", "1", True),
        ("HourBoundary", "6h", True),
        ("HourBoundary", "6d", False),
        ("HourBoundary", "6m", False),
        ("DayBoundary", "7", True),
        ("DayBoundary", "7d", True),
        ("DayBoundary", "7h", False),
        ("MonthBoundary", "12", True),
        ("MonthBoundary", "3mo", True),
        ("MonthBoundary", "3m", False),
        ("MonthBoundary", "3d", False),
        ("MonthBoundary", "", False),
        ("MonthBoundary", "-1", False),
        ("MonthBoundary", " 1", False),
    ],
)
def test_period_rule_ties_format_to_alignment(alignment: str, period: str, accepted: bool) -> None:
    rule = rule_by_message("Offering", PERIOD)
    assert program(rule).execute({"self": {"tickAlignment": alignment, "period": period}}) is accepted


@pytest.mark.parametrize(("period", "accepted"), [("0h", False), ("0", False), ("00mo", False), ("10", True)])
def test_zero_period_rule(period: str, accepted: bool) -> None:
    rule = rule_by_message("Offering", ZERO_PERIOD)
    assert program(rule).execute({"self": {"tickAlignment": "HourBoundary", "period": period}}) is accepted


@pytest.mark.parametrize(
    ("margins", "failing"),
    [
        ({}, set()),
        ({"absoluteMicros": 0}, set()),
        ({"factorMilli": 980}, set()),
        ({"absoluteMicros": 1, "factorMilli": 1000}, {MARGINS_BOTH}),
        ({"absoluteMicros": -1}, {ABSOLUTE}),
        ({"factorMilli": -1}, {FACTOR}),
    ],
)
def test_margin_rules(margins: dict[str, int], failing: set[str]) -> None:
    rules = [(r, m) for k, p, r, m in all_rules() if k == "Offering" and p.endswith("margins")]
    assert len(rules) == 3
    assert {m for r, m in rules if program(r).execute({"self": margins}) is not True} == failing


def test_offering_spec_rule_compares_the_whole_spec() -> None:
    rule = program(rule_by_message("Offering", IMMUTABLE))
    spec = defaulted(example("Offering/managed-postgres"))["spec"]
    assert rule.execute({"self": spec, "oldSelf": copy.deepcopy(spec)}) is True
    changed = copy.deepcopy(spec)
    changed["pricing"]["resourcePricing"][0]["margins"]["factorMilli"] = 1151
    assert rule.execute({"self": changed, "oldSelf": spec}) is False


@pytest.mark.parametrize(
    ("old_parent", "new_parent", "failing"),
    [
        (None, None, set()),
        ({"subscriptionRef": {"name": "a"}}, {"subscriptionRef": {"name": "a"}}, set()),
        (None, {"subscriptionRef": {"name": "a"}}, {"presence"}),
        ({"subscriptionRef": {"name": "a"}}, None, {"presence"}),
        ({"subscriptionRef": {"name": "a"}}, {"subscriptionRef": {"name": "b"}}, {"value"}),
        ({"subscriptionRef": {"name": "a"}}, {"subscriptionRef": {"name": "a", "namespace": "x"}}, {"value"}),
    ],
    ids=["none", "same", "added", "removed", "renamed", "namespace-added"],
)
def test_parent_rules_cover_presence_and_value(old_parent: Any, new_parent: Any, failing: set[str]) -> None:
    presence = program(rule_by_message("Subscription", PARENT_PRESENCE))
    value = program(rule_by_message("Subscription", PARENT_VALUE))
    ref = {"name": "o"}
    old = {"offeringRef": ref} | ({} if old_parent is None else {"parent": old_parent})
    new = {"offeringRef": ref} | ({} if new_parent is None else {"parent": new_parent})
    context = {"self": new, "oldSelf": old}
    assert {name for name, p in (("presence", presence), ("value", value)) if p.execute(context) is not True} == failing


@pytest.mark.parametrize(
    ("name", "spec", "failing"),
    [
        ("default", {"onpremoptions": {}}, set()),
        ("default", {"gcpoptions": {"cloudIntegrationSecret": "s"}}, set()),
        ("cluster", {"azureoptions": {}}, {"name"}),
        ("default", {}, {"at-least-one", "exactly-one"}),
        ("default", None, {"at-least-one", "exactly-one"}),
        ("default", {"awsoptions": {}, "onpremoptions": {}}, {"exactly-one"}),
        ("default", {"awsoptions": {}, "gcpoptions": {}, "azureoptions": {}, "onpremoptions": {}}, {"exactly-one"}),
    ],
)
def test_provider_rules(name: str, spec: dict[str, Any] | None, failing: set[str]) -> None:
    labels = {PROVIDER_NAME: "name", PROVIDER_ANY: "at-least-one", PROVIDER_ONE: "exactly-one"}
    obj: dict[str, Any] = {"metadata": {"name": name}} | ({} if spec is None else {"spec": spec})
    results = {labels[m]: program(rule_by_message("FinOpsProvider", m)).execute({"self": obj}) for m in labels}
    assert {label for label, ok in results.items() if ok is not True} == failing


# --- admission of whole objects ------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(EXAMPLE_BY_KEY))
def test_examples_are_accepted(key: str) -> None:
    assert admit(EXAMPLE_BY_KEY[key]) == []


@pytest.mark.parametrize("path", REPO_MANIFESTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_repository_manifests_are_accepted(path: Path) -> None:
    objects = [doc for doc in load_all(path) if str(doc.get("apiVersion", "")).startswith(f"{GROUP}/")]
    assert objects, f"{path} holds no {GROUP} objects"
    for obj in objects:
        assert admit(obj) == [], obj["metadata"]["name"]


def test_costjob_defaults_match_the_operator() -> None:
    spec = defaulted(example("CostJob/defaults"))["spec"]
    assert spec == {
        "type": "ResourceCostCollection",
        "interval": "24h",
        "databaseInitTimeout": "2m",
        "kubernetesOperationTimeout": "1m",
        "openCostFetchTimeout": "2m",
        "databaseInsertTimeout": "3m",
        "statusUpdateTimeout": "1m",
    }
    demo = next(d for d in load_all(REPO_MANIFESTS[1]) if d["kind"] == "CostJob")
    assert defaulted(demo)["spec"]["interval"] == "1h"


def test_subscription_lifecycle_has_no_default_so_the_offering_policy_survives() -> None:
    sub = example("Subscription/acme-postgres", {"spec.lifecycle.onParentDeactivate": DELETE})
    assert "onParentDeactivate" not in defaulted(sub)["spec"]["lifecycle"]
    assert defaulted(example("Offering/platform-base", {"spec.lifecycle": {}}))["spec"]["lifecycle"] == {
        "onParentDeactivate": "Deactivate"
    }


# (example, changes, an expected error substring, CEL messages expected: exactly these)
INVALID: list[tuple[str, dict[str, Any], str, list[str]]] = [
    ("PriceBook/standard", {"spec.currency": "usd"}, "spec.currency: Invalid value: 'usd'", []),
    ("PriceBook/standard", {"spec.currency": "EURO"}, "should match '^[A-Z]{3}$'", []),
    ("PriceBook/standard", {"spec.currency": DELETE}, "spec.currency: Required value", []),
    ("PriceBook/standard", {"spec.valuationMode": "ratio"}, "spec.valuationMode: Unsupported value", []),
    ("PriceBook/standard", {"spec.valuationMode": DELETE}, "spec.valuationMode: Required value", []),
    ("PriceBook/standard", {"spec.rates.cpuHour": "-0.1"}, "spec.rates.cpuHour: Invalid value", []),
    ("PriceBook/standard", {"spec.rates.gpuHour": "1e3"}, "spec.rates.gpuHour: Invalid value", []),
    ("PriceBook/standard", {"spec.rates.pvGbHour": "0.5."}, "spec.rates.pvGbHour: Invalid value", []),
    ("PriceBook/standard", {"spec.rates.ramGbHour": 0.004}, TYPE_ERROR, []),
    ("PriceBook/standard", {"spec.rates.memoryGbHour": "1"}, 'unknown field "spec.rates.memoryGbHour"', []),
    ("PriceBook/standard", {"status.active": "true"}, TYPE_ERROR, []),
    ("PriceBook/standard", {"status.conditions.0.status": "Yes"}, "status.conditions[0].status: Unsupported", []),
    ("PriceBook/standard", {"status.conditions.0.lastTransitionTime": "yesterday"}, "date-time", []),
    ("PriceBook/standard", {"spec": DELETE}, "spec: Required value", []),
    ("Offering/managed-postgres", {"spec.pricing.subscriptionFee.period": "1h30m"}, PERIOD, [PERIOD]),
    ("Offering/managed-postgres", {"spec.pricing.subscriptionFee.period": "1"}, PERIOD, [PERIOD]),
    ("Offering/platform-base", {"spec.pricing.subscriptionFee.period": "1h"}, PERIOD, [PERIOD]),
    ("Offering/shift-slot", {"spec.pricing.subscriptionFee.period": "1d"}, PERIOD, [PERIOD]),
    ("Offering/weekly-support", {"spec.pricing.subscriptionFee.period": "1mo"}, PERIOD, [PERIOD]),
    (
        "Offering/shift-slot",
        {"spec.pricing.subscriptionFee.period": "0"},
        ZERO_PERIOD,
        [ZERO_PERIOD],
    ),
    ("Offering/platform-base", {"spec.pricing.subscriptionFee.period": 1}, TYPE_ERROR, []),
    ("Offering/platform-base", {"spec.pricing.subscriptionFee.period": "1" * 33}, "Too long", []),
    ("Offering/platform-base", {"spec.pricing.subscriptionFee.priceMicros": 0}, "greater than or equal to 1", []),
    ("Offering/platform-base", {"spec.pricing.subscriptionFee.priceMicros": "40"}, TYPE_ERROR, []),
    ("Offering/platform-base", {"spec.pricing.subscriptionFee.priceMicros": 2**63}, "out of int64 range", []),
    ("Offering/managed-postgres", {"spec.pricing.subscriptionFee.minPeriods": 0}, "greater than or equal to 1", []),
    ("Offering/managed-postgres", {"spec.pricing.subscriptionFee.minPeriods": 2**31}, "out of int32 range", []),
    ("Offering/platform-base", {"spec.pricing.subscriptionFee.tickAlignment": "Weekly"}, "Unsupported value", []),
    ("Offering/platform-base", {"spec.pricing.subscriptionFee.priceMicros": DELETE}, "priceMicros: Required", []),
    ("Offering/platform-base", {"spec.pricing.subscriptionFee.tickAlignment": DELETE}, "tickAlignment: Required", []),
    (
        "Offering/managed-postgres",
        {"spec.pricing.resourcePricing.0.margins.absoluteMicros": 5},
        MARGINS_BOTH,
        [MARGINS_BOTH],
    ),
    (
        "Offering/managed-postgres",
        {"spec.pricing.resourcePricing.1.margins.absoluteMicros": -200},
        ABSOLUTE,
        [ABSOLUTE],
    ),
    (
        "Offering/managed-postgres",
        {"spec.pricing.resourcePricing.0.margins.factorMilli": -1},
        "resourcePricing[0].margins: Invalid value: factorMilli must be >= 0",
        [FACTOR],
    ),
    ("Offering/usage-only", {"spec.pricing.resourcePricing.0.name": "memoryHour"}, "Unsupported value", []),
    ("Offering/usage-only", {"spec.pricing.resourcePricing.0.name": DELETE}, "name: Required value", []),
    ("Offering/free", {"spec.pricing": DELETE}, "spec.pricing: Required value", []),
    ("Offering/managed-postgres", {"spec.lifecycle.onParentDeactivate": "Keep"}, "Unsupported value", []),
    ("Offering/managed-postgres", {"spec.compatibility.requiredOfferings.1.name": DELETE}, "Required value", []),
    ("Offering/managed-postgres", {"status.resolvedPricing.meters.1.name": "cpuHour"}, "Duplicate value", []),
    ("Offering/managed-postgres", {"status.resolvedPricing.resolvedAt": DELETE}, "resolvedAt: Required", []),
    ("Subscription/acme-platform", {"spec.offeringRef": DELETE}, "spec.offeringRef: Required value", []),
    ("Subscription/acme-platform", {"spec.offeringRef.name": DELETE}, "offeringRef.name: Required value", []),
    ("Subscription/acme-postgres", {"spec.usageSources.1": {}}, USAGE_SOURCE, [USAGE_SOURCE]),
    ("Subscription/acme-postgres", {"spec.usageSources.0.resourceType": "Service"}, "Unsupported value", []),
    ("Subscription/acme-postgres", {"spec.parent.subscriptionRef": DELETE}, "subscriptionRef: Required value", []),
    ("Subscription/acme-postgres", {"spec.lifecycle.onParentDeactivate": "Cascade"}, "Unsupported value", []),
    ("Subscription/acme-postgres", {"status.costs.0.granularity": "week"}, "Unsupported value", []),
    ("Subscription/acme-postgres", {"status.costs.1.granularity": "hour"}, "Duplicate value", []),
    ("Subscription/acme-postgres", {"status.costs.0.breakdown": [{"name": "cpu"}]}, "Unsupported value", []),
    ("Subscription/acme-postgres", {"status.activatedAt": "2026-04-01 09:00"}, "date-time", []),
    ("CostJob/allocations", {"spec.type": "Nightly"}, "spec.type: Unsupported value", []),
    ("CostJob/allocations", {"spec.k8sOperationTimeout": "1m"}, 'unknown field "spec.k8sOperationTimeout"', []),
    ("CostJob/allocations", {"spec.interval": 3600}, TYPE_ERROR, []),
    ("CostJob/allocations", {"spec.sharding.concurrency": 0}, "greater than or equal to 1", []),
    ("CostJob/allocations", {"spec.sharding.namespacesPerShard": 0}, "greater than or equal to 1", []),
    ("CostJob/allocations", {"spec.resources.limits.cpu": "lots"}, "spec.resources.limits.cpu: Invalid value", []),
    ("CostJob/allocations", {"spec.resources.requests.memory": 1.5}, TYPE_ERROR, []),
    ("CostJob/allocations", {"status.lastExecutionStatus": "Running"}, "Unsupported value", []),
    ("CostJob/allocations", {"status.executionHistory.0.executionTime": DELETE}, "executionTime: Required", []),
    (
        "CostJob/allocations",
        {"status.executionHistory": [{"executionTime": "2026-04-01T10:00:00Z", "status": "Success"}] * 11},
        "must have at most 10 items",
        [],
    ),
    ("FinOpsProvider/onprem", {"metadata.name": "prod"}, PROVIDER_NAME, [PROVIDER_NAME]),
    ("FinOpsProvider/onprem", {"spec": {}}, PROVIDER_ANY, [PROVIDER_ANY, PROVIDER_ONE]),
    ("FinOpsProvider/aws", {"spec.gcpoptions": {}}, PROVIDER_ONE, [PROVIDER_ONE]),
    ("FinOpsProvider/onprem", {"spec": DELETE}, "spec: Required value", [PROVIDER_ANY, PROVIDER_ONE]),
    (
        "FinOpsProvider/onprem",
        {"spec.onpremoptions.cloudIntegrationSecret": "s"},
        'unknown field "spec.onpremoptions.cloudIntegrationSecret"',
        [],
    ),
    ("FinOpsProvider/gcp-list-prices", {"spec.gcpoptions.currency": "eur"}, "should match '^[A-Z]{3}$'", []),
    ("FinOpsProvider/gcp-list-prices", {"spec.gcpoptions.currency": "EURO"}, "should match '^[A-Z]{3}$'", []),
]


@pytest.mark.parametrize(
    ("key", "changes", "expected", "cel"), INVALID, ids=[f"{k}:{','.join(c)}" for k, c, _e, _m in INVALID]
)
def test_invalid_objects_are_rejected(key: str, changes: dict[str, Any], expected: str, cel: list[str]) -> None:
    errors = admit(example(key, changes))
    assert any(expected in error for error in errors), errors
    assert sorted(m for m in messages(errors) if m in RULE_MESSAGES) == sorted(cel), errors


RULE_MESSAGES = {m for _k, _p, _r, m in all_rules()}

# (example, changes made by the update, CEL messages expected: exactly these)
UPDATES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("Offering/managed-postgres", {"metadata.labels": {"tier": "gold"}}, []),
    ("Offering/managed-postgres", {"status.ready": "False"}, []),
    ("Offering/managed-postgres", {"spec.pricing.subscriptionFee.priceMicros": 45000000}, [IMMUTABLE]),
    ("Offering/platform-base", {"spec.compatibility": {"requiredOfferings": []}}, [IMMUTABLE]),
    ("Offering/managed-postgres", {"spec.pricing.resourcePricing.2.margins": {}}, [IMMUTABLE]),
    ("Offering/managed-postgres", {"spec.lifecycle": {"onParentDeactivate": "Deactivate"}}, [IMMUTABLE]),
    ("Subscription/acme-postgres", {"spec.usageSources": [{"namespace": "acme"}]}, []),
    ("Subscription/acme-postgres", {"spec.lifecycle": {"onParentDeactivate": "Deactivate"}}, []),
    ("Subscription/acme-postgres", {"status.deactivatedAt": "2026-04-02T00:00:00Z"}, []),
    ("Subscription/acme-postgres", {"spec.offeringRef.name": "managed-mysql"}, [OFFERING_REF]),
    ("Subscription/acme-platform", {"spec.offeringRef.namespace": "acme"}, [OFFERING_REF]),
    ("Subscription/acme-platform", {"spec.parent": {"subscriptionRef": {"name": "root"}}}, [PARENT_PRESENCE]),
    ("Subscription/acme-postgres", {"spec.parent": DELETE}, [PARENT_PRESENCE]),
    ("Subscription/acme-postgres", {"spec.parent.subscriptionRef.name": "other"}, [PARENT_VALUE]),
    (
        "Subscription/acme-postgres",
        {"spec.offeringRef.name": "x", "spec.parent.subscriptionRef.namespace": "y"},
        [OFFERING_REF, PARENT_VALUE],
    ),
    ("FinOpsProvider/onprem", {"spec": {"awsoptions": {"cloudIntegrationSecret": "s"}}}, []),
    ("PriceBook/standard", {"spec.rates.cpuHour": "0.05"}, []),
    ("CostJob/allocations", {"spec.interval": "6h"}, []),
]


@pytest.mark.parametrize(("key", "changes", "cel"), UPDATES, ids=[f"{k}:{','.join(c)}" for k, c, _m in UPDATES])
def test_updates(key: str, changes: dict[str, Any], cel: list[str]) -> None:
    old = example(key)
    errors = admit(example(key, changes), old)
    assert sorted(messages(errors)) == sorted(cel), errors
    assert len(errors) == len(cel), errors


def test_transition_rules_do_not_run_on_create() -> None:
    # The same objects that fail as updates are fine as creates: oldSelf does not exist yet.
    for key, changes, _cel in UPDATES:
        assert admit(example(key, changes)) == [], key


def test_every_rule_message_is_exercised() -> None:
    produced = {m for _k, _c, _e, cel in INVALID for m in cel} | {m for _k, _c, cel in UPDATES for m in cel}
    assert produced == RULE_MESSAGES


def test_documented_messages_are_verbatim() -> None:
    """The operator's documented messages (finops-docs reference/webhooks.md) are kept word for word;
    the parent presence message and the zero-period rule are ours."""
    documented = {
        IMMUTABLE,
        OFFERING_REF,
        PARENT_VALUE,
        MARGINS_BOTH,
        ABSOLUTE,
        FACTOR,
        PERIOD,
        USAGE_SOURCE,
        PROVIDER_NAME,
        PROVIDER_ANY,
        PROVIDER_ONE,
    }
    assert documented <= RULE_MESSAGES
    assert RULE_MESSAGES - documented == {PARENT_PRESENCE, ZERO_PERIOD}
