"""We test these aspects of the Argo CD UI extension's build and installation, offline:

- the checked-in ``ui/dist/extension-finops.js`` is exactly what ``ui/build.mjs`` builds from
  ``ui/src`` with the pinned esbuild (so it cannot go stale), and it never bundles React or a JSX
  runtime: it uses the global that Argo CD provides and registers with ``extensionsAPI``;
- the tarball (``ui/package.py``, ``make ui-tarball``) is reproducible, its checksum file has the
  line argocd-extension-installer greps for, and installing it as the installer does (unpack,
  copy ``resources/*`` into ``/tmp/extensions/resources/``) makes Argo CD serve exactly our script,
  in the directory the installer writes ``EXTENSION_JS_VARS`` into;
- the argocd-server patch merges into Argo CD's own Deployment (strategic merge: Argo CD's
  containers, mounts and volumes kept), the result validates strictly, the installer image is
  pinned and both containers share the ``/tmp/extensions`` emptyDir; ``kubectl patch --local``
  gives the same object where kubectl is installed;
- the argocd layer grants ``p, role:readonly, extensions, invoke, finops, allow`` in a key of its
  own, and its proxy config forwards to cost-api with the header cost_api checks.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import kubernetes_validate
import pytest
import yaml

from infra.settings import CostApiSettings
from tests.deploy import manifests
from tests.deploy.manifests import ARGOCD_SERVER_PATCH, ROOT

UI = ROOT / "ui"
DIST = UI / "dist" / "extension-finops.js"
ARGOCD_SERVER = ROOT / "tests" / "data" / "argocd" / "argocd-server-deployment.yaml"
EXTENSION_FILE = re.compile(r"^extension(.*)\.js$")  # Argo CD's server.go extensionsPattern
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
}


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: `make test` installs Debian's npm as root; else sudo apt-get install npm")
    if not (UI / "node_modules" / "esbuild").is_dir():
        pytest.fail("ui/node_modules is missing: run `make ui` (npm ci in ui/)")
    return node


def test_the_checked_in_extension_is_a_fresh_build(tmp_path: Path) -> None:
    out = tmp_path / "extension-finops.js"
    result = subprocess.run([_node(), str(UI / "build.mjs"), str(out)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == DIST.read_bytes(), "ui/dist/extension-finops.js is stale: run `make ui` and commit it"


def test_the_extension_uses_argo_cds_react_and_registers_itself() -> None:
    script = DIST.read_text()
    for marker in ("__SECRET_INTERNALS_DO_NOT_USE_OR_YOU_WILL_BE_FIRED", "ReactCurrentOwner", "react.production"):
        assert marker not in script, f"React is bundled ({marker})"
    assert "React.createElement(" in script and "React.useState(" in script  # Argo CD's global React
    # Argo CD 3.5 (React 19) breaks extensions that bundle their own JSX runtime; we use none
    assert "jsx-runtime" not in script and "jsxs(" not in script
    assert 'registerResourceExtension(AppTab, "argoproj.io", "Application"' in script
    assert "registerSystemLevelExtension(ClusterView" in script
    assert script.lstrip().startswith("//") and "(() => {" in script  # one IIFE: nothing leaks into Argo CD's page


def _package() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ui_package", UI / "package.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tarball_installs_as_the_installer_does(tmp_path: Path) -> None:
    tarball, checksum = _package().build(tmp_path / "a")
    again, _ = _package().build(tmp_path / "b")
    assert tarball.read_bytes() == again.read_bytes(), "the tarball is not reproducible"
    # install.sh: expected_sha=$(curl $checksum_url | grep "$ext_filename" | awk '{print $1;}')
    line = next(line for line in checksum.read_text().splitlines() if tarball.name in line)
    assert line.split()[0] == hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert tarball.read_bytes()[:2] == b"\x1f\x8b"  # `file --mime-type`: application/gzip
    download, extensions = tmp_path / "download", tmp_path / "tmp-extensions"
    download.mkdir()
    subprocess.run(["tar", "-zxf", str(tarball)], cwd=download, check=True)  # the installer's own step
    shutil.copytree(download / "resources", extensions / "resources", dirs_exist_ok=True)
    # EXTENSION_JS_VARS: find /tmp/extensions/resources -type d -name "extension*-$EXTENSION_NAME*.js"
    assert [p.name for p in (extensions / "resources").rglob("*") if p.is_dir() and p.match("extension*-finops*.js")]
    served = sorted(
        p for p in extensions.rglob("*") if p.is_file() and not p.is_symlink() and EXTENSION_FILE.match(p.name)
    )
    assert [p.relative_to(extensions).as_posix() for p in served] == [
        "resources/extension-finops.js/extension-finops.js"
    ]
    assert served[0].read_bytes() == DIST.read_bytes()


def strategic_merge(base: Any, patch: Any, key: str | None = None) -> Any:
    """Kubernetes' strategic merge for the fields the patch uses: maps merge, lists of named
    objects merge by their merge key, other lists are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for k, v in patch.items():
            merged[k] = strategic_merge(base[k], v, k) if k in base else copy.deepcopy(v)
        return merged
    if isinstance(base, list) and isinstance(patch, list) and key in MERGE_KEYS:
        by = MERGE_KEYS[key]
        merged_list = [copy.deepcopy(item) for item in base]
        for item in patch:
            index = next((i for i, old in enumerate(merged_list) if old.get(by) == item.get(by)), None)
            if index is None:
                merged_list.append(copy.deepcopy(item))
            else:
                merged_list[index] = strategic_merge(merged_list[index], item)
        return merged_list
    return copy.deepcopy(patch)


@pytest.fixture(scope="module")
def patched() -> dict[str, Any]:
    base = yaml.safe_load(ARGOCD_SERVER.read_text())
    patch = yaml.safe_load(ARGOCD_SERVER_PATCH.read_text())
    assert (patch["kind"], patch["metadata"]["name"]) == (base["kind"], base["metadata"]["name"])
    merged: dict[str, Any] = strategic_merge(base, patch)
    return merged


def test_the_patch_adds_the_installer_and_keeps_argo_cds_server(patched: dict[str, Any]) -> None:
    kubernetes_validate.validate(copy.deepcopy(patched), "1.33", strict=True)
    base = yaml.safe_load(ARGOCD_SERVER.read_text())["spec"]["template"]["spec"]
    spec = patched["spec"]["template"]["spec"]
    (installer,) = spec["initContainers"]
    assert re.fullmatch(r"quay\.io/argoprojlabs/argocd-extension-installer:v\d+\.\d+\.\d+", installer["image"])
    env = {e["name"]: e["value"] for e in installer["env"]}
    assert env["EXTENSION_NAME"] == "finops"
    assert env["EXTENSION_URL"].rsplit("/", 1)[1] == "extension-finops.tar.gz"
    assert env["EXTENSION_CHECKSUM_URL"].rsplit("/", 1)[1] == "extension-finops.tar.gz.sha256"
    assert json.loads(env["EXTENSION_JS_VARS"]) == {
        "gate_app": CostApiSettings.model_fields["CLUSTER_SCOPE_APP"].default
    }
    (server,) = spec["containers"]
    (base_server,) = base["containers"]
    assert server["image"] == base_server["image"] and server["env"] == base_server["env"]
    assert server["volumeMounts"][: len(base_server["volumeMounts"])] == base_server["volumeMounts"]
    assert spec["volumes"][: len(base["volumes"])] == base["volumes"]
    shared = {v["name"] for v in spec["volumes"] if v.get("emptyDir") == {}} - {v["name"] for v in base["volumes"]}
    assert shared == {"extensions"}
    for container in (installer, server):
        mounts = {m["mountPath"].rstrip("/"): m["name"] for m in container["volumeMounts"]}
        assert mounts["/tmp/extensions"] == "extensions", container["name"]


def test_kubectl_merges_the_patch_the_same_way(patched: dict[str, Any]) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:  # our merge alone is checked above; kubectl cross-checks it where installed
        return
    command = [kubectl, "patch", "--local", "-f", str(ARGOCD_SERVER), "--type=strategic"]
    result = subprocess.run(
        [*command, f"--patch-file={ARGOCD_SERVER_PATCH}", "--output=json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    theirs = json.loads(result.stdout)
    # kubectl puts the patch's new list items first; the merge key orders both the same way
    assert _by_key(theirs["spec"]["template"]["spec"]) == _by_key(patched["spec"]["template"]["spec"])


def _by_key(node: Any, key: str | None = None) -> Any:
    if isinstance(node, dict):
        return {k: _by_key(v, k) for k, v in node.items()}
    if isinstance(node, list):
        items = [_by_key(item) for item in node]
        return sorted(items, key=lambda item: item[MERGE_KEYS[key]]) if key in MERGE_KEYS else items
    return node


def test_the_argocd_layer_grants_the_extension_and_proxies_to_cost_api() -> None:
    objects = {obj["metadata"]["name"]: obj for obj in manifests.layer("argocd") if obj["kind"] == "ConfigMap"}
    rbac = objects["argocd-rbac-cm"]["data"]
    assert "policy.csv" not in rbac  # never overwrite the user's own policy
    lines = [
        line.strip()
        for key, text in rbac.items()
        if re.fullmatch(r"policy\..+\.csv", key)
        for line in text.splitlines()
    ]
    assert "p, role:readonly, extensions, invoke, finops, allow" in lines
    config = yaml.safe_load(objects["argocd-cm"]["data"]["extension.config.finops"])
    (service,) = config["services"]
    assert service["url"] == "http://cost-api.finops.svc.cluster.local"
    header = CostApiSettings.model_fields["PROXY_TOKEN_HEADER"].default
    assert [h["name"] for h in service["headers"]] == [header]
    assert objects["argocd-cmd-params-cm"]["data"]["server.enable.proxy.extension"] == "true"
