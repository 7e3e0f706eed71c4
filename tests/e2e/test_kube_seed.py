"""Seeding the sandbox API server from a folder of manifests, in-process and as ``python -m``."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from infra.kube import KubeClient
from sandbox.kube import ManifestError, load_manifests, serve

GROUP, VERSION = "finops.stakater.com", "v1alpha1"

CRDS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pricebooks.finops.stakater.com}
spec:
  group: finops.stakater.com
  scope: Cluster
  names: {kind: PriceBook, plural: pricebooks, singular: pricebook}
  versions: [{name: v1alpha1, served: true, storage: true, subresources: {status: {}}}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: costjobs.finops.stakater.com}
spec:
  group: finops.stakater.com
  scope: Namespaced
  names: {kind: CostJob, plural: costjobs}
  versions: [{name: v1alpha1, served: true, storage: true}]
"""

# Sorted before crds/, so the server must apply the CRDs first to get PriceBook's scope right.
RESOURCES = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {finops.stakater.com/tenant: a}}
---
apiVersion: finops.stakater.com/v1alpha1
kind: PriceBook
metadata: {name: default}
spec: {cpuCoreHour: "0.031611"}
---
apiVersion: finops.stakater.com/v1alpha1
kind: CostJob
metadata: {name: daily, namespace: team-a, labels: {schedule: daily}}
spec: {window: 1d}
status: {phase: Succeeded, observedGeneration: 1}
"""

LIST = """
apiVersion: v1
kind: List
items:
  - {apiVersion: finops.stakater.com/v1alpha1, kind: CostJob, metadata: {name: weekly, namespace: team-a}, spec: {}}
"""


@pytest.fixture
def seed_dir(tmp_path: Path) -> Path:
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "finops.yaml").write_text(CRDS)
    (tmp_path / "00-resources" / "nested").mkdir(parents=True)
    (tmp_path / "00-resources" / "nested" / "objects.yml").write_text(RESOURCES)
    (tmp_path / "00-resources" / "list.yaml").write_text(LIST)
    (tmp_path / "README.md").write_text("not a manifest")
    return tmp_path


def test_load_order_is_by_path(seed_dir: Path) -> None:
    kinds = [doc["kind"] for doc in load_manifests(seed_dir)]
    assert kinds == [
        "List",
        "Namespace",
        "PriceBook",
        "CostJob",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
    ]


def test_seeded_server(seed_dir: Path) -> None:
    with serve(seed_dir=seed_dir) as server, KubeClient.from_url(server.url) as kube:
        books = kube.list_objects(GROUP, VERSION, "pricebooks")
        assert [(b["kind"], b["metadata"].get("namespace")) for b in books] == [("PriceBook", None)]
        assert kube.get_object(GROUP, VERSION, "pricebooks", None, "default")["spec"] == {"cpuCoreHour": "0.031611"}
        daily = kube.get_object(GROUP, VERSION, "costjobs", "team-a", "daily")
        assert daily["status"] == {"phase": "Succeeded", "observedGeneration": 1}  # fixtures keep their status
        assert [j["metadata"]["name"] for j in kube.list_objects(GROUP, VERSION, "costjobs", namespace="team-a")] == [
            "daily",
            "weekly",
        ]
        tenants = kube.list_objects("", "v1", "namespaces", label_selector="finops.stakater.com/tenant=a")
        assert [n["metadata"]["name"] for n in tenants] == ["team-a"]
        assert server.store.get(
            "apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "costjobs.finops.stakater.com"
        )


def test_bad_manifests_are_reported(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("kind: [unclosed")
    with pytest.raises(ManifestError, match=r"broken\.yaml"):
        load_manifests(tmp_path)
    (tmp_path / "broken.yaml").write_text("just: a mapping")
    with pytest.raises(ManifestError, match="not a Kubernetes object"):
        load_manifests(tmp_path)
    with pytest.raises(ManifestError, match="does not exist"):
        load_manifests(tmp_path / "missing")


def test_python_dash_m(seed_dir: Path) -> None:
    command = [sys.executable, "-m", "sandbox.kube", "--seed", str(seed_dir), "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{url}/apis/{GROUP}/{VERSION}/pricebooks", timeout=5) as response:  # noqa: S310
            assert [i["metadata"]["name"] for i in json.load(response)["items"]] == ["default"]
    finally:
        process.terminate()
        process.wait(timeout=5)
        if process.stdout is not None:
            process.stdout.close()
