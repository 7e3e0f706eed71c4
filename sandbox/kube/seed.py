"""Reading a folder of YAML manifests, the way a GitOps repository lays them out.

The local stack and the tests describe a cluster as files (CRDs, namespaces, custom
resources), exactly what ``kubectl apply -R -f DIR`` would take. Files are read recursively
in sorted path order so the result never depends on the filesystem; multi-document files and
``kind: List`` wrappers are flattened. Ordering by kind (CRDs first) is the store's job.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from sandbox.kube.resources import CRD_GROUP, split_api_version

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_APPLY_FIRST = {(CRD_GROUP, "CustomResourceDefinition"): 0, ("", "Namespace"): 1}


class ManifestError(ValueError):
    """A manifest file is not valid YAML or holds something other than objects."""


def manifest_paths(root: Path) -> list[Path]:
    if not root.is_dir():
        raise ManifestError(f"seed directory {root} does not exist or is not a directory")
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)


def load_manifests(root: Path) -> list[dict[str, Any]]:
    """Every object in every manifest file under ``root``, in path then document order."""
    docs: list[dict[str, Any]] = []
    for path in manifest_paths(root):
        try:
            loaded = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except yaml.YAMLError as exc:
            raise ManifestError(f"{path}: {exc}") from exc
        for index, doc in enumerate(loaded):
            if doc is None:
                continue
            if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
                raise ManifestError(f"{path}: document {index} is not a Kubernetes object")
            docs.append(doc)
    return docs


def _expand_lists(docs: Iterable[Any]) -> Iterator[dict[str, Any]]:
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            yield from (item for item in doc["items"] if isinstance(item, dict))
        else:
            yield doc


def _rank(doc: dict[str, Any]) -> int:
    group = split_api_version(str(doc.get("apiVersion", "")))[0]
    return _APPLY_FIRST.get((group, str(doc.get("kind", ""))), 2)


def apply_order(docs: Iterable[Any]) -> list[dict[str, Any]]:
    """Flatten ``List`` objects, then CRDs first and Namespaces next, others in their order.

    A custom resource applied before its CRD would otherwise get a guessed plural and scope.
    """
    return sorted(_expand_lists(docs), key=_rank)
