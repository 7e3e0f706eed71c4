"""Our own small kustomize: renders ``knative/`` (and its optional layers) into objects, offline.

It supports exactly what our kustomizations use, and refuses anything else, so a kustomize
feature added to a ``kustomization.yaml`` cannot be silently ignored by the checks:

- ``resources``: files (every YAML document) and directories (their own kustomization), in order;
- ``patches``: only the strategic-merge ``$patch: delete`` of a resource named by ``target``;
- ``images``: ``newName``/``newTag``/``digest`` of every ``containers``/``initContainers`` image,
  in any kind (as kustomize does, Knative Services included);
- ``labels``: ``pairs`` added to every object's ``metadata.labels`` (no selectors, no templates).

``kubectl kustomize`` renders the same objects (tests/deploy/test_kustomize.py compares both when
kubectl is installed).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
KNATIVE = ROOT / "knative"
LAYERS = {
    name: path
    for name, path in {
        "base": KNATIVE,
        "eventing": KNATIVE / "eventing",
        "argocd": KNATIVE / "argocd",
        "crds": KNATIVE / "crds",  # applied on its own, before the base
        "monitoring": KNATIVE / "monitoring",  # Prometheus Operator objects, opted into
    }.items()
    if (path / "kustomization.yaml").exists()
}
SUPPORTED_KEYS = {"apiVersion", "kind", "resources", "patches", "images", "labels"}
KNATIVE_GROUPS = {"serving.knative.dev", "eventing.knative.dev", "sources.knative.dev"}
# Custom resources validated against our own schemas (tests/deploy/schemas/), as Knative's are.
OWN_SCHEMA_GROUPS = KNATIVE_GROUPS | {"monitoring.coreos.com"}
SECRET_EXAMPLE = KNATIVE / "secret.example.yaml"
# A strategic-merge patch of Argo CD's own argocd-server Deployment, applied where Argo CD is
# installed, never a resource of ours (checked by tests/deploy/test_ui_extension.py).
ARGOCD_SERVER_PATCH = KNATIVE / "argocd" / "argocd-server-extension-patch.yaml"

Obj = dict[str, Any]


class UnsupportedKustomization(ValueError):
    """The kustomization uses a feature this loader does not implement."""


def load_documents(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def render(directory: Path) -> list[Obj]:
    """The objects ``kubectl kustomize directory`` would produce (in file order)."""
    objects, _ = _render(directory)
    return objects


def resource_files(directory: Path) -> set[Path]:
    """Every file the kustomization (recursively) reads, kustomization files included."""
    _, files = _render(directory)
    return files


def _render(directory: Path) -> tuple[list[Obj], set[Path]]:
    kustomization = directory / "kustomization.yaml"
    spec = yaml.safe_load(kustomization.read_text()) or {}
    unknown = set(spec) - SUPPORTED_KEYS
    if unknown:
        raise UnsupportedKustomization(f"{kustomization}: unsupported fields {sorted(unknown)}")
    objects: list[Obj] = []
    files = {kustomization}
    for entry in spec.get("resources", []):
        path = (directory / entry).resolve()
        if path.is_dir():
            nested, nested_files = _render(path)
            objects.extend(nested)
            files |= nested_files
        else:
            objects.extend(load_documents(path))
            files.add(path)
    for patch in spec.get("patches", []):
        objects = _delete_patch(objects, patch, kustomization)
    for image in spec.get("images", []):
        for obj in objects:
            _set_image(obj, image)
    for labels in spec.get("labels", []):
        if (
            set(labels) - {"pairs", "includeSelectors", "includeTemplates"}
            or labels.get("includeSelectors")
            or labels.get("includeTemplates")
        ):
            raise UnsupportedKustomization(f"{kustomization}: only `labels: [{{pairs: ...}}]` is supported")
        for obj in objects:
            obj["metadata"].setdefault("labels", {}).update(labels["pairs"])
    _check_unique(objects, kustomization)
    return objects, files


def _delete_patch(objects: list[Obj], patch: Obj, where: Path) -> list[Obj]:
    body = yaml.safe_load(patch.get("patch", "")) if isinstance(patch.get("patch"), str) else None
    target = patch.get("target") or {}
    if set(patch) != {"target", "patch"} or not isinstance(body, dict) or body.get("$patch") != "delete":
        raise UnsupportedKustomization(f"{where}: only inline `$patch: delete` patches with a target are supported")
    if set(target) - {"kind", "name", "namespace"}:
        raise UnsupportedKustomization(f"{where}: patch targets select by kind, name and namespace only")
    kept = [obj for obj in objects if not _matches(obj, target)]
    if len(kept) == len(objects):
        raise UnsupportedKustomization(f"{where}: patch target {target} matches nothing")
    return kept


def _matches(obj: Obj, target: Obj) -> bool:
    meta = obj.get("metadata", {})
    return all(
        value == {"kind": obj.get("kind"), "name": meta.get("name"), "namespace": meta.get("namespace")}[key]
        for key, value in target.items()
    )


def _split_image(ref: str) -> tuple[str, str]:
    """``registry/name:tag@digest`` -> (name without tag/digest, the rest)."""
    name, at, digest = ref.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return name[:colon], name[colon:] + at + digest
    return name, at + digest


def _set_image(node: Any, image: Obj) -> None:
    if set(image) - {"name", "newName", "newTag", "digest"}:
        raise UnsupportedKustomization(f"images entry {image}: unsupported fields")
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                for container in value:
                    name, rest = _split_image(str(container.get("image", "")))
                    if name == image["name"]:
                        suffix = (
                            f"@{image['digest']}"
                            if "digest" in image
                            else (f":{image['newTag']}" if "newTag" in image else rest)
                        )
                        container["image"] = image.get("newName", name) + suffix
            _set_image(value, image)
    elif isinstance(node, list):
        for item in node:
            _set_image(item, image)


def identity(obj: Obj) -> tuple[str, str, str, str]:
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    meta = obj.get("metadata", {})
    return group, str(obj.get("kind")), str(meta.get("namespace", "")), str(meta.get("name"))


def _check_unique(objects: list[Obj], where: Path) -> None:
    seen: set[tuple[str, str, str, str]] = set()
    for obj in objects:
        key = identity(obj)
        if key in seen:
            raise UnsupportedKustomization(f"{where}: {key} is defined twice")
        seen.add(key)


# ---- the rendered layers and what the checks look up in them ----


@functools.cache
def layer(name: str) -> tuple[Obj, ...]:
    return tuple(render(LAYERS[name]))


def everything() -> Iterator[Obj]:
    for name in LAYERS:
        yield from layer(name)


def of_kind(kind: str, layer_name: str = "base") -> list[Obj]:
    return [obj for obj in layer(layer_name) if obj["kind"] == kind]


def named(kind: str, name: str, layer_name: str = "base") -> Obj:
    matches = [obj for obj in of_kind(kind, layer_name) if obj["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name!r} in {layer_name}, found {len(matches)}"
    return matches[0]


def is_knative(obj: Obj) -> bool:
    return identity(obj)[0] in KNATIVE_GROUPS


def has_own_schema(obj: Obj) -> bool:
    """A custom resource the Kubernetes schemas do not know: checked against tests/deploy/schemas/."""
    return identity(obj)[0] in OWN_SCHEMA_GROUPS


@dataclass(frozen=True)
class EnvSource:
    """Where one environment variable of a container comes from."""

    name: str
    kind: str  # "value", "configMap", "secret", "fieldRef"
    ref: str = ""  # ConfigMap or Secret name, or the fieldRef path
    key: str = ""  # key in that ConfigMap or Secret
    value: str = ""


def example_secret() -> Obj:
    (secret,) = load_documents(SECRET_EXAMPLE)
    return secret


def config_map_data(name: str) -> dict[str, str]:
    return {k: str(v) for k, v in named("ConfigMap", name)["data"].items()}


def container_env(container: Obj) -> dict[str, EnvSource]:
    """Every variable the container gets: ``envFrom`` first, ``env`` overriding (as Kubernetes does)."""
    env: dict[str, EnvSource] = {}
    for source in container.get("envFrom", []):
        assert "prefix" not in source, "envFrom prefixes are not used"
        if "configMapRef" in source:
            ref = source["configMapRef"]["name"]
            for key, value in config_map_data(ref).items():
                env[key] = EnvSource(key, "configMap", ref, key, value)
        else:
            ref = source["secretRef"]["name"]
            assert ref == example_secret()["metadata"]["name"], f"unknown Secret {ref}"
            for key in example_secret()["stringData"]:
                env[key] = EnvSource(key, "secret", ref, key)
    for var in container.get("env", []):
        name = var["name"]
        if "value" in var:
            env[name] = EnvSource(name, "value", value=str(var["value"]))
            continue
        source = var["valueFrom"]
        if "secretKeyRef" in source:
            env[name] = EnvSource(name, "secret", source["secretKeyRef"]["name"], source["secretKeyRef"]["key"])
        elif "configMapKeyRef" in source:
            ref, key = source["configMapKeyRef"]["name"], source["configMapKeyRef"]["key"]
            env[name] = EnvSource(name, "configMap", ref, key, config_map_data(ref)[key])
        else:
            env[name] = EnvSource(name, "fieldRef", source["fieldRef"]["fieldPath"])
    return env


def resolved_env(container: Obj, secrets: dict[str, str]) -> dict[str, str]:
    """The container's environment as the process sees it, secrets taken from ``secrets``."""
    env: dict[str, str] = {}
    for name, source in container_env(container).items():
        if source.kind == "secret":
            env[name] = secrets[source.key]
        elif source.kind in ("value", "configMap"):
            env[name] = source.value
    return env


def service_container(service: Obj) -> Obj:
    (container,) = service["spec"]["template"]["spec"]["containers"]
    return dict(container)


def service_target(service: Obj) -> str:
    return container_env(service_container(service))["FUNCTION_TARGET"].value


def services_by_target() -> dict[str, Obj]:
    found: dict[str, Obj] = {}
    for service in of_kind("Service"):
        if identity(service)[0] == "serving.knative.dev":
            target = service_target(service)
            assert target not in found, f"two Services run {target}"
            found[target] = service
    return found


LOCAL_URL = re.compile(r"^http://(?P<name>[a-z0-9-]+)\.(?P<namespace>[a-z0-9-]+)\.svc\.cluster\.local(?::\d+)?/?$")


def service_at(url: str) -> Obj:
    """The Knative Service a cluster-local URL reaches."""
    match = LOCAL_URL.match(url)
    assert match, f"{url} is not a cluster-local Service URL"
    service = named("Service", match["name"])
    assert service["metadata"]["namespace"] == match["namespace"], url
    return service
