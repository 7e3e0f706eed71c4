"""We test these aspects of rendering the manifests (knative/):

- every kustomization renders with our loader, objects unique, every image set by ``images``;
- ``kubectl kustomize`` renders exactly the same objects (when kubectl is installed);
- every YAML file under knative/ is part of one kustomization, except the Secret example, which
  must never be (``kubectl apply -k`` would overwrite the real secrets with placeholders), and the
  patch of Argo CD's own argocd-server (tests/deploy/test_ui_extension.py checks it);
- the loader refuses kustomize features it does not implement.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.deploy import manifests
from tests.deploy.manifests import ARGOCD_SERVER_PATCH, KNATIVE, LAYERS, SECRET_EXAMPLE, UnsupportedKustomization


@pytest.mark.parametrize("name", list(LAYERS))
def test_every_layer_renders(name: str) -> None:
    objects = manifests.layer(name)
    assert objects
    for obj in objects:
        assert {"apiVersion", "kind", "metadata"} <= set(obj), obj
        assert obj["metadata"].get("name"), obj


def test_base_images_come_from_the_kustomization() -> None:
    images = {container["image"] for obj in manifests.layer("base") for container in _containers(obj)}
    # One image for everything: the Services, the install Job and the CronJobs' `finops ping`.
    assert images == {"registry.example.com/platform/finops-functions:0.1.0"}


def _containers(node: object) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers"):
                found.extend(value)
            else:
                found.extend(_containers(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_containers(item))
    return found


def _canonical(objects: object) -> list[str]:
    assert isinstance(objects, (list, tuple))
    return sorted(json.dumps(obj, sort_keys=True) for obj in objects)


@pytest.mark.parametrize("name", list(LAYERS))
def test_kubectl_kustomize_renders_the_same_objects(name: str) -> None:
    """Cross-checks our loader with ``kubectl kustomize`` where kubectl exists; elsewhere our
    loader alone must render the layer into uniquely named objects."""
    ours = manifests.layer(name)
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in ours]
    assert ours and len(keys) == len(set(keys))
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return
    result = subprocess.run([kubectl, "kustomize", str(LAYERS[name])], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    theirs = [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]
    assert _canonical(theirs) == _canonical(ours)


def test_every_manifest_belongs_to_one_kustomization_and_the_secret_example_to_none() -> None:
    used: list[Path] = []
    for directory in LAYERS.values():
        used.extend(manifests.resource_files(directory))
    # The base does not include the optional layers: each file is read by exactly one of them.
    assert len(used) == len(set(used))
    present = {path.resolve() for path in KNATIVE.rglob("*.yaml")}
    assert present - set(used) == {SECRET_EXAMPLE.resolve(), ARGOCD_SERVER_PATCH.resolve()}


def test_the_loader_refuses_what_it_does_not_implement(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    (tmp_path / "kustomization.yaml").write_text("resources: [a.yaml]\nnamespace: other\n")
    with pytest.raises(UnsupportedKustomization, match="namespace"):
        manifests.render(tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [a.yaml]\npatches:\n  - target: {kind: ConfigMap, name: a}\n    patch: |\n      data: {x: y}\n"
    )
    with pytest.raises(UnsupportedKustomization, match="delete"):
        manifests.render(tmp_path)
    (tmp_path / "kustomization.yaml").write_text("resources: [a.yaml, a.yaml]\n")
    with pytest.raises(UnsupportedKustomization, match="twice"):
        manifests.render(tmp_path)
