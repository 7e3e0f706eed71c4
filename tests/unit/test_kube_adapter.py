"""``infra.kube`` without a server: lazy import, paths, permissions, error translation, config."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from finops.errors import (
    Conflict,
    FinOpsError,
    InvalidInput,
    KubernetesUnavailable,
    NotFound,
    PermanentError,
)
from infra.kube import METHOD_VERBS, AlreadyExists, KubeClient, Operation, Permission, permission_for, wrap_errors
from infra.kube.errors import from_status, parse_status, translate

COSTJOB = Operation("patch", "finops.stakater.com", "v1alpha1", "costjobs", "team-a", "job-1", "status")


def test_importing_the_adapter_does_not_import_kubernetes() -> None:
    code = "import sys, infra.kube; sys.exit(1 if 'kubernetes' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], check=False, timeout=60).returncode == 0


def test_paths() -> None:
    assert Operation("list", "", "v1", "namespaces").path() == "/api/v1/namespaces"
    assert Operation("get", "", "v1", "configmaps", "ns", "c").path() == "/api/v1/namespaces/ns/configmaps/c"
    assert COSTJOB.path() == "/apis/finops.stakater.com/v1alpha1/namespaces/team-a/costjobs/job-1/status"
    assert (
        Operation("create", "apps", "v1", "deployments", "ns", "web").path()
        == "/apis/apps/v1/namespaces/ns/deployments"
    )
    assert Operation("get", "g", "v1", "things", None, "a/b").path() == "/apis/g/v1/things/a%2Fb"
    assert Operation.discovery("", "v1").path() == "/api/v1"
    assert Operation.discovery("networking.k8s.io", "v1").path() == "/apis/networking.k8s.io/v1"


def test_every_request_method_declares_its_permission() -> None:
    public = {
        name
        for name, member in inspect.getmembers(KubeClient, inspect.isfunction)
        if not name.startswith("_") and name != "close"
    }
    assert public == set(METHOD_VERBS)
    assert permission_for("patch_status", "finops.stakater.com", "costjobs") == Permission(
        "patch", "finops.stakater.com", "costjobs/status"
    )
    assert COSTJOB.permission == permission_for("patch_status", "finops.stakater.com", "costjobs")
    assert permission_for("api_resources", "apps", "") is None  # discovery: system:discovery grants it


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (409, "AlreadyExists", AlreadyExists),
        (400, "BadRequest", InvalidInput),
        (422, "Invalid", InvalidInput),
        (401, "Unauthorized", PermanentError),
        (403, "Forbidden", PermanentError),
        (405, "MethodNotAllowed", PermanentError),
        (429, "TooManyRequests", KubernetesUnavailable),
        (500, "InternalError", KubernetesUnavailable),
        (503, "ServiceUnavailable", KubernetesUnavailable),
        (0, "", KubernetesUnavailable),
    ],
)
def test_status_codes(status: int, reason: str, expected: type[FinOpsError]) -> None:
    error = from_status(status, "server says no", COSTJOB, reason)
    assert type(error) is expected
    assert "server says no" in error.message


def test_messages_name_what_was_addressed() -> None:
    not_found = from_status(404, "gone", COSTJOB).message
    for part in ("finops.stakater.com/v1alpha1", "costjobs", "team-a", "job-1"):
        assert part in not_found
    forbidden = from_status(403, "RBAC: denied", COSTJOB).message
    assert "patch costjobs/status in API group 'finops.stakater.com'" in forbidden
    discovery = from_status(403, "RBAC: denied", Operation.discovery("apps", "v1")).message
    assert "the API resource list of apps/v1" in discovery and "system:discovery" in discovery


def test_translate_library_exceptions() -> None:
    import urllib3
    from kubernetes.client.exceptions import ApiException

    exc = ApiException(status=409, reason="Conflict")
    exc.body = json.dumps({"kind": "Status", "message": "the object has been modified", "reason": "Conflict"})
    error = translate(exc, COSTJOB)
    assert isinstance(error, Conflict) and "the object has been modified" in error.message
    refused = urllib3.exceptions.NewConnectionError(None, "refused")  # type: ignore[arg-type]
    assert isinstance(translate(refused, COSTJOB), KubernetesUnavailable)
    timeout = urllib3.exceptions.ReadTimeoutError(None, "/", "slow")  # type: ignore[arg-type]
    assert isinstance(translate(timeout, COSTJOB), KubernetesUnavailable)
    assert translate(ValueError("not ours"), COSTJOB) is None


def test_wrap_errors_chains_and_passes_other_exceptions() -> None:
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(NotFound) as caught, wrap_errors(COSTJOB):
        raise ApiException(status=404, reason="Not Found")
    assert isinstance(caught.value.__cause__, ApiException)
    with pytest.raises(KeyError), wrap_errors(COSTJOB):
        raise KeyError("a bug, not an API failure")


def test_status_bodies_never_leak_raw_text() -> None:
    assert parse_status('{"message": "m", "reason": "Conflict"}', "fb") == ("m", "Conflict")
    assert parse_status(b"<html>Authorization: Bearer secret</html>", "Bad Gateway") == ("Bad Gateway", "")
    assert parse_status(None, "x" * 1000)[0] == "x" * 500


def test_patch_bodies_are_checked_before_sending() -> None:
    client = KubeClient(api_client=object())  # never reached: the checks come first
    with pytest.raises(InvalidInput, match="JSON patch is a list"):
        client.patch_object("g", "v1", "things", "ns", "a", {"op": "add"}, content_type="application/json-patch+json")
    with pytest.raises(InvalidInput, match="json-patch"):
        client.patch_object("g", "v1", "things", "ns", "a", [{"op": "remove", "path": "/a"}])
    with pytest.raises(InvalidInput, match="unsupported patch content type"):
        client.patch_object("g", "v1", "things", "ns", "a", {}, content_type="application/apply-patch+yaml")
    with pytest.raises(InvalidInput, match="status"):
        client.patch_status("g", "v1", "things", "ns", "a", {"phase": "Done"})
    with pytest.raises(ValueError, match="timeout"):
        KubeClient(api_client=object(), timeout_seconds=0)


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
"""


def test_from_environment_uses_kubeconfig_outside_a_cluster(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    with KubeClient.from_environment(environ={"KUBECONFIG": str(path)}, timeout_seconds=3) as client:
        assert client._api.configuration.host == "http://127.0.0.1:1"
        assert client.timeout_seconds == 3
    with pytest.raises(PermanentError, match="Kubernetes configuration"):
        KubeClient.from_environment(environ={"KUBECONFIG": str(tmp_path / "missing")})


def test_from_environment_goes_in_cluster_when_running_in_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(PermanentError, match="in-cluster"):
        KubeClient.from_environment(environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
