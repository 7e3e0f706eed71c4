"""We test that every status the billing functions write would be stored as written by a real API
server, by serving the sandbox Kubernetes API *with the repository's CRDs* (knative/crds), so each
write of a PriceBook, Offering, Subscription or FinOpsProvider is pruned and validated against its
``openAPIV3Schema`` (``sandbox.kube.schema``), and running ``reconcile_all`` and ``collect_charges``
in-process against it and PostgreSQL:

- the fixtures themselves (tests/data/kube, the objects below) are valid and lose nothing;
- reconciliation (PriceBooks active and demoted, the provider, Offerings resolved or waiting for a
  required Offering, Subscriptions activated, waiting for a target or a parent) writes no status the
  schema refuses (a ``422`` would be a reconcile error) or prunes;
- ``collect_charges`` (``status.costs``, then a deleted Subscription deactivated, settled and
  released) likewise;
- a second reconcile with nothing new does not resolve the Offerings again (it would if the
  PriceBook fingerprint in ``status.resolvedPricing`` were pruned): checked with and without the CRDs;
- a CostJob's execution record (``usecases.costjob_status.record_execution``, which logs and swallows a
  refused write) is stored whole, history capped at the schema's ``maxItems``;
- what the controllers rely on survives: ``status.ready`` as the string the CRDs declare, and
  ``status.observedGeneration`` on every kind that has one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from finops.hours import HOUR, Hour
from infra.kube import KubeClient
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox.kube.schema import Pruned, Rejected
from tests.e2e.billing_world import ACTIVATED, AGG, FB, OFFERING, PINNED, subscription, usage
from usecases.collect_charges.service import ChargesResult, collect_charges
from usecases.costjob_status import HISTORY_LIMIT, CostJobRef, record_execution
from usecases.reconcile.opencost import MtoTarget, OpenCostTarget
from usecases.reconcile.service import reconcile_all
from usecases.runs import Run as FunctionRun

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "knative" / "crds"
DATA_KUBE = ROOT / "tests" / "data" / "kube"
OPENCOST = OpenCostTarget("opencost", "opencost", "finops-operator-custom-pricing-configs")
MTO_API = "dependencies.tenantoperator.stakater.com/v1alpha1"
MTO = MtoTarget(
    "dependencies.tenantoperator.stakater.com", "v1alpha1", "opencosts", "multi-tenant-operator", "opencost"
)

N = 3  # Subscriptions sub-0 .. sub-2 on "gold", billed from usage rows of app-0 .. app-2


class _KubectlLoader(yaml.SafeLoader):
    """kubectl keeps YAML timestamps as strings."""


_KubectlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def manifests(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return [doc for file in files for doc in yaml.load_all(file.read_text(), Loader=_KubectlLoader) if doc]


def crds() -> list[dict[str, Any]]:
    return [doc for doc in manifests(CRD_DIR) if doc.get("kind") == "CustomResourceDefinition"]


def world(*, with_crds: bool = True) -> list[dict[str, Any]]:
    """The billing world of tests/e2e/test_billing_scale.py and test_collect_charges.py, and the
    cases that write the other statuses: a waiting Offering, a target-gated, a child and an orphan
    Subscription, the provider and the Multi Tenant Operator's OpenCost."""
    ns = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        for name in ("finops", "opencost", "multi-tenant-operator", *(f"team-{i}" for i in range(5)))
    ]
    return [
        *(crds() if with_crds else []),
        *ns,
        *manifests(DATA_KUBE / "pricebooks.yaml"),  # "standard" active (label), "legacy" not
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "opencost", "namespace": "opencost"},
            "spec": {"template": {"metadata": {"annotations": {}}}},
        },
        {
            "apiVersion": MTO_API,
            "kind": "OpenCost",
            "metadata": {"name": "opencost", "namespace": "multi-tenant-operator"},
            "spec": {"opencost": {}},
        },
        {
            "apiVersion": FB,
            "kind": "FinOpsProvider",
            "metadata": {"name": "default"},
            "spec": {"awsoptions": {"pricingModelSource": "Pricebook"}},
        },
        OFFERING,
        {
            "apiVersion": FB,
            "kind": "Offering",
            "metadata": {"name": "addon", "namespace": "finops"},
            "spec": {
                "pricing": {
                    "subscriptionFee": {
                        "priceMicros": 500_000,
                        "period": "1",
                        "tickAlignment": "DayBoundary",
                        "minPeriods": 1,
                    }
                },
                "compatibility": {"requiredOfferings": [{"name": "gold", "namespace": "finops"}]},
                "lifecycle": {"onParentDeactivate": "Orphan"},
            },
        },
        {
            "apiVersion": FB,
            "kind": "Offering",
            "metadata": {"name": "stranded", "namespace": "finops"},
            "spec": {
                "pricing": {"resourcePricing": [{"name": "ramGbHour", "margins": {"absoluteMicros": 10}}]},
                "compatibility": {"requiredOfferings": [{"name": "nowhere"}]},
            },
        },
        *(subscription(i, activated=None) for i in range(N)),
        {
            "apiVersion": FB,
            "kind": "Subscription",
            "metadata": {"name": "addon-0", "namespace": "team-0"},
            "spec": {
                "offeringRef": {"name": "addon", "namespace": "finops"},
                "parent": {"subscriptionRef": {"name": "sub-0"}},
            },
        },
        {
            "apiVersion": FB,
            "kind": "Subscription",
            "metadata": {"name": "gated", "namespace": "team-1"},
            "spec": {
                "offeringRef": {"name": "gold", "namespace": "finops"},
                "lifecycle": {
                    "targetRef": {
                        "apiVersion": "networking.k8s.io/v1",
                        "kind": "NetworkPolicy",
                        "name": "absent",
                        "namespace": "team-1",
                    }
                },
            },
        },
        {
            "apiVersion": FB,
            "kind": "Subscription",
            "metadata": {"name": "lost", "namespace": "team-2"},
            "spec": {"offeringRef": {"name": "missing", "namespace": "finops"}},
        },
        # A percent book (cannot price), Offerings requiring each other, a target that exists.
        {
            "apiVersion": FB,
            "kind": "PriceBook",
            "metadata": {"name": "pct", "namespace": "finops"},
            "spec": {"currency": "EUR", "valuationMode": "percent"},
        },
        *(
            {
                "apiVersion": FB,
                "kind": "Offering",
                "metadata": {"name": f"loop-{a}", "namespace": "finops"},
                "spec": {"pricing": {}, "compatibility": {"requiredOfferings": [{"name": f"loop-{b}"}]}},
            }
            for a, b in (("a", "b"), ("b", "a"))
        ),
        {
            "apiVersion": FB,
            "kind": "Subscription",
            "metadata": {"name": "looped", "namespace": "team-3"},
            "spec": {"offeringRef": {"name": "loop-a", "namespace": "finops"}},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "present", "namespace": "team-4"},
            "spec": {},
        },
        {
            "apiVersion": FB,
            "kind": "Subscription",
            "metadata": {"name": "targeted", "namespace": "team-4"},
            "spec": {
                "offeringRef": {"name": "gold", "namespace": "finops"},
                "lifecycle": {
                    "onParentDeactivate": "Deactivate",
                    "targetRef": {
                        "apiVersion": "networking.k8s.io/v1",
                        "kind": "NetworkPolicy",
                        "name": "present",
                        "namespace": "team-4",
                    },
                },
            },
        },
    ]


@dataclass
class Run:
    """What the product did against a schema-checking sandbox."""

    kube: sandbox_kube.KubeServer
    errors: dict[str, dict[str, str]] = field(default_factory=dict)  # phase -> object -> error

    @property
    def rejected(self) -> list[Rejected]:
        return list(self.kube.store.schemas.rejected)

    @property
    def pruned(self) -> list[Pruned]:
        return list(self.kube.store.schemas.pruned)

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.kube.store.get(FB, kind, namespace, name)
        assert obj is not None, (kind, namespace, name)
        return obj


def describe(run: Run) -> str:
    lines = [f"{r.kind} {r.namespace}/{r.name}: {e.message}" for r in run.rejected for e in r.errors]
    lines += [f"pruned {p.kind} {p.namespace}/{p.name} {p.path} = {p.value!r}" for p in run.pruned]
    lines += [f"{phase} error {what}: {why}" for phase, errors in run.errors.items() for what, why in errors.items()]
    return "\n".join(lines)


def charges_run(db: Database, kube: sandbox_kube.KubeServer, pinned: Hour) -> ChargesResult:
    with KubeClient.from_url(kube.url) as client:
        return collect_charges(db, client, "c", AGG, OPENCOST, scheduled=pinned.start, now=pinned.start, mto=MTO)


@pytest.fixture
def seeded() -> Iterator[sandbox_kube.KubeServer]:
    with sandbox_kube.serve(objects=copy.deepcopy(world())) as kube:
        yield kube


@pytest.fixture
def billed(db: Database, seeded: sandbox_kube.KubeServer) -> Run:
    """Reconciled at activation time, billed an hour later, then sub-2 deleted and billed to its release."""
    kube = seeded
    schemas = kube.store.schemas
    assert (schemas.rejected, schemas.pruned) == ([], [])  # the fixtures are valid (see the first test)
    run = Run(kube)
    with KubeClient.from_url(kube.url) as client:
        reconciled = reconcile_all(client, db, "c", OPENCOST, ACTIVATED, MTO)
    run.errors["reconcile"] = dict(reconciled.result.errors)
    usage(db, N, ACTIVATED - timedelta(minutes=30), PINNED.start)
    run.errors["collect_charges"] = dict(charges_run(db, kube, PINNED).errors)
    kube.store.delete(FB, "subscriptions", "team-2", "sub-2")  # held by the product's finalizer
    later = Hour(PINNED.start + 3 * HOUR)
    usage(db, N, PINNED.end, later.start)
    run.errors["collect_charges after a deletion"] = dict(charges_run(db, kube, later).errors)  # deactivates
    usage(db, N, later.end, later.end)
    run.errors["collect_charges settling"] = dict(charges_run(db, kube, Hour(later.end)).errors)  # releases
    return run


def test_the_fixtures_are_valid_and_lose_nothing(seeded: sandbox_kube.KubeServer) -> None:
    store = seeded.store
    assert (store.schemas.rejected, store.schemas.pruned) == ([], [])
    assert store.get(FB, "offerings", "finops", "addon") is not None
    assert len(store.list(FB, "subscriptions")) == N + 5


def test_no_status_write_is_rejected(billed: Run) -> None:
    # A refused status write is either a reconcile/charges error or swallowed by the product.
    assert billed.rejected == [], describe(billed)
    assert billed.errors == {phase: {} for phase in billed.errors}, describe(billed)


def test_no_status_field_is_pruned(billed: Run) -> None:
    assert billed.pruned == [], describe(billed)


def test_the_billing_flow_ran(billed: Run) -> None:
    """The run did what the other billing tests check, so the two tests above saw every write."""
    sub = billed.get("subscriptions", "team-0", "sub-0")
    assert sub["status"].get("activatedAt") and [c["granularity"] for c in sub["status"].get("costs", [])] == [
        "hour",
        "day",
        "month",
    ], sub["status"]
    assert billed.kube.store.get(FB, "subscriptions", "team-2", "sub-2") is None  # deactivated, settled, released
    offering = billed.get("offerings", "finops", "gold")
    assert offering["status"]["resolvedPricing"]["meters"], offering["status"]
    assert billed.get("pricebooks", "finops", "standard")["status"]["active"] is True
    assert billed.get("finopsproviders", None, "default")["status"]["conditions"]


@pytest.mark.parametrize(
    ("plural", "namespace", "name"),
    [
        ("pricebooks", "finops", "standard"),
        ("pricebooks", "finops", "legacy"),
        ("pricebooks", "finops", "pct"),
        ("offerings", "finops", "loop-a"),
        ("subscriptions", "team-3", "looped"),
        ("subscriptions", "team-4", "targeted"),
        ("offerings", "finops", "gold"),
        ("offerings", "finops", "addon"),
        ("offerings", "finops", "stranded"),
        ("subscriptions", "team-0", "sub-0"),
        ("subscriptions", "team-0", "addon-0"),
        ("subscriptions", "team-1", "gated"),
        ("subscriptions", "team-2", "lost"),
        ("finopsproviders", None, "default"),
    ],
)
def test_statuses_keep_ready_as_a_string_and_observed_generation(
    billed: Run, plural: str, namespace: str | None, name: str
) -> None:
    status = billed.get(plural, namespace, name).get("status") or {}
    assert status, f"no status stored:\n{describe(billed)}"
    if "ready" in status or plural != "finopsproviders":
        assert status.get("ready") in ("True", "False", "Unknown"), (status.get("ready"), describe(billed))
    assert isinstance(status.get("observedGeneration"), int), (status, describe(billed))


@pytest.mark.parametrize("with_crds", [False, True], ids=["lenient", "crd-schemas"])
def test_a_second_reconcile_does_not_resolve_the_offerings_again(db: Database, with_crds: bool) -> None:
    """``needs_resolution`` compares the active book's fingerprint with the one kept in
    ``status.resolvedPricing``; if the server dropped it, every run re-resolves and rewrites."""
    with sandbox_kube.serve(objects=copy.deepcopy(world(with_crds=with_crds))) as kube:
        with KubeClient.from_url(kube.url) as client:
            first = reconcile_all(client, db, "c", OPENCOST, ACTIVATED, MTO)
            resolved = kube.store.get(FB, "offerings", "finops", "gold")
            second = reconcile_all(client, db, "c", OPENCOST, ACTIVATED + HOUR, MTO)
        again = kube.store.get(FB, "offerings", "finops", "gold")
    assert (first.result.errors, second.result.errors) == ({}, {})
    assert resolved is not None and again is not None
    assert again["status"]["resolvedPricing"] == resolved["status"]["resolvedPricing"], [
        (p.path, p.value) for p in kube.store.schemas.pruned
    ]


def test_costjob_execution_records_are_stored_whole() -> None:
    objects = [*crds(), *manifests(DATA_KUBE / "costjobs.yaml")]
    with sandbox_kube.serve(objects=objects) as kube, KubeClient.from_url(kube.url) as client:
        ref = CostJobRef(namespace="finops", name="allocations")
        outcomes = ["success", "failed", "partial"] * 4
        for n, outcome in enumerate(outcomes):
            run = FunctionRun(
                "collect_allocations",
                "c",
                outcome=outcome,
                duration_ms=1234 + n,
                http_status=500 if n == 1 else 200,
                error="boom" if outcome != "success" else None,
            )
            record_execution(client, ref, run)
        stored = kube.store.get(FB, "costjobs", "finops", "allocations")
        schemas = kube.store.schemas
    assert (schemas.rejected, schemas.pruned) == ([], []), (schemas.rejected, schemas.pruned)
    assert stored is not None
    history = stored["status"]["executionHistory"]
    assert len(history) == HISTORY_LIMIT and history[0]["status"] == "Success" and history[0]["error"] == "boom"
    assert stored["status"]["lastExecutionStatus"] == "Success" and stored["status"]["lastSuccessfulExecutionTime"]


def test_without_an_active_pricebook_no_status_write_is_rejected_or_pruned(db: Database) -> None:
    """Only the percent book: it cannot price, so the metered Offerings wait (NoActivePricebook)."""
    objects = [o for o in copy.deepcopy(world()) if o["kind"] != "PriceBook" or o["metadata"]["name"] == "pct"]
    with sandbox_kube.serve(objects=objects) as kube:
        with KubeClient.from_url(kube.url) as client:
            reconciled = reconcile_all(client, db, "c", OPENCOST, ACTIVATED, MTO)
        run = Run(kube, {"reconcile": dict(reconciled.result.errors)})
        gold = run.get("offerings", "finops", "gold")
        assert gold["status"]["ready"] == "False", gold["status"]
        assert (run.rejected, run.pruned, run.errors) == ([], [], {"reconcile": {}}), describe(run)
