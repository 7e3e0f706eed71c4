"""``infra.kube.discovery`` against the sandbox API server over real HTTP.

Resolution is checked where guessing a plural goes wrong (NetworkPolicy, Endpoints, a CRD
with an irregular plural and cluster scope) and where there is nothing to find (a kind the
group does not serve, a group the server does not serve). Requests are counted from the
sandbox's own request log, so "cached" means the server saw no second request; time is a fake
clock, never a sleep.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from finops.errors import InvalidInput, KubernetesUnavailable
from infra.kube import ApiResource, Discovery, KubeClient, discovery_for
from infra.kube.discovery import RECHECK_SECONDS, resolve
from sandbox.kube import KubeServer, serve

CRD_GROUP, CRD_VERSION = "zoo.example.com", "v1beta1"


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with serve() as running:
        yield running


@pytest.fixture
def kube(server: KubeServer) -> Iterator[KubeClient]:
    with KubeClient.from_url(server.url, timeout_seconds=5) as client:
        yield client


class Requests:
    """The request lines the sandbox logged (``GET /apis/apps/v1 HTTP/1.1 200``)."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self._caplog = caplog

    def lines(self) -> list[str]:
        return [r.getMessage() for r in self._caplog.records if r.name == "sandbox.kube"]

    def to(self, path: str) -> int:
        return sum(1 for line in self.lines() if line.startswith(f"GET {path} "))


@pytest.fixture
def requests(caplog: pytest.LogCaptureFixture) -> Requests:
    caplog.set_level(logging.DEBUG, logger="sandbox.kube")
    return Requests(caplog)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def octopus_crd() -> dict[str, Any]:
    """A cluster-scoped CRD whose plural no English rule would guess."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"octopodes.{CRD_GROUP}"},
        "spec": {
            "group": CRD_GROUP,
            "scope": "Cluster",
            "names": {"kind": "Octopus", "plural": "octopodes", "singular": "octopus", "listKind": "OctopusList"},
            "versions": [{"name": CRD_VERSION, "served": True, "storage": True}],
        },
    }


def test_built_in_kinds_resolve_to_their_real_plural_and_scope(kube: KubeClient) -> None:
    discovery = Discovery(kube)
    assert discovery.resolve("apps/v1", "Deployment") == ApiResource("apps", "v1", "deployments", "Deployment", True)
    assert discovery.resolve("networking.k8s.io/v1", "NetworkPolicy") == ApiResource(
        "networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True
    )
    assert discovery.resolve("v1", "Endpoints") == ApiResource("", "v1", "endpoints", "Endpoints", True)
    namespace = discovery.resolve("v1", "Namespace")
    assert namespace == ApiResource("", "v1", "namespaces", "Namespace", False)
    assert namespace is not None and namespace.api_version == "v1"
    pod = discovery.resolve("v1", "Pod")  # the list also has pods/status, a subresource of the same kind
    assert pod is not None and (pod.plural, pod.namespaced) == ("pods", True)


def test_a_cluster_scoped_crd_registered_at_runtime(kube: KubeClient) -> None:
    kube.create_object("apiextensions.k8s.io", "v1", "customresourcedefinitions", None, octopus_crd())
    found = Discovery(kube).resolve(f"{CRD_GROUP}/{CRD_VERSION}", "Octopus")
    assert found == ApiResource(CRD_GROUP, CRD_VERSION, "octopodes", "Octopus", False)
    assert found is not None
    # What was resolved addresses the objects: cluster-wide, at the declared plural.
    body = {"apiVersion": found.api_version, "kind": "Octopus", "metadata": {"name": "paul"}}
    kube.create_object(found.group, found.version, found.plural, None, body)
    got = kube.get_object(found.group, found.version, found.plural, None, "paul")
    assert "namespace" not in got["metadata"]


def test_nothing_to_find_is_none(kube: KubeClient, requests: Requests) -> None:
    discovery = Discovery(kube)
    assert discovery.resolve("apps/v1", "NoSuchKind") is None
    assert discovery.resolve("nosuch.example.com/v1", "Thing") is None  # the server answers 404
    assert discovery.resolve("apps/v9", "Deployment") is None  # a version the group does not serve
    assert discovery.resolve("apps/v1", "deployment") is None  # kinds are case-sensitive
    assert requests.to("/apis/apps/v1") == 1
    assert requests.to("/apis/nosuch.example.com/v1") == 1


def test_a_group_version_is_fetched_once(kube: KubeClient, requests: Requests) -> None:
    discovery = Discovery(kube)
    first = discovery.resolve("apps/v1", "Deployment")
    assert discovery.resolve("apps/v1", "Deployment") == first
    assert discovery.resolve("apps/v1", "StatefulSet") is not None
    assert discovery.resolve("v1", "Namespace") is not None
    assert discovery.resolve("v1", "ConfigMap") is not None
    assert requests.to("/apis/apps/v1") == 1
    assert requests.to("/api/v1") == 1


def test_an_unknown_kind_is_asked_again_only_after_the_recheck_interval(kube: KubeClient, requests: Requests) -> None:
    clock = Clock()
    discovery = Discovery(kube, clock=clock)
    api_version = f"{CRD_GROUP}/{CRD_VERSION}"
    assert discovery.resolve(api_version, "Octopus") is None  # not installed: 404
    kube.create_object("apiextensions.k8s.io", "v1", "customresourcedefinitions", None, octopus_crd())
    clock.now += RECHECK_SECONDS - 1
    assert discovery.resolve(api_version, "Octopus") is None  # still the cached answer
    assert requests.to(f"/apis/{api_version}") == 1
    clock.now += 1
    found = discovery.resolve(api_version, "Octopus")
    assert found is not None and found.plural == "octopodes"
    assert requests.to(f"/apis/{api_version}") == 2
    clock.now += 10 * RECHECK_SECONDS
    assert discovery.resolve(api_version, "Octopus") == found  # a kind found is never asked again
    assert discovery.resolve(api_version, "Squid") is None  # a miss on a stale list asks once more ...
    assert discovery.resolve(api_version, "Squid") is None  # ... and that answer is fresh
    assert requests.to(f"/apis/{api_version}") == 3


def test_the_process_shares_one_discovery_per_client(server: KubeServer, requests: Requests) -> None:
    with KubeClient.from_url(server.url) as one, KubeClient.from_url(server.url) as other:
        assert discovery_for(one) is discovery_for(one)
        assert discovery_for(one) is not discovery_for(other)
        assert resolve(one, "apps/v1", "Deployment") == resolve(one, "apps/v1", "Deployment")
        assert requests.to("/apis/apps/v1") == 1
        assert resolve(other, "apps/v1", "Deployment") is not None
        assert requests.to("/apis/apps/v1") == 2


@pytest.mark.parametrize(
    ("api_version", "kind", "message"),
    [
        ("", "Deployment", "apiVersion is empty"),
        ("apps/v1/x", "Deployment", "more than one '/'"),
        ("/v1", "Deployment", "not a DNS subdomain"),
        ("Apps/v1", "Deployment", "not a DNS subdomain"),
        ("apps/V1", "Deployment", "not a DNS label"),
        ("apps/", "Deployment", "not a DNS label"),
        ("apps/v1", "", "kind is empty"),
    ],
)
def test_malformed_references_are_invalid_input(
    kube: KubeClient, requests: Requests, api_version: str, kind: str, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        Discovery(kube).resolve(api_version, kind)
    assert requests.lines() == [], "nothing was sent"


def test_the_client_refuses_a_malformed_group_or_version(kube: KubeClient) -> None:
    with pytest.raises(InvalidInput, match="not a Kubernetes API group/version"):
        kube.api_resources("apps/v1?x=", "v1")
    with pytest.raises(InvalidInput, match="not a Kubernetes API group/version"):
        kube.api_resources("apps", "")


def test_api_resources_lists_subresources_and_is_empty_for_an_unknown_group(kube: KubeClient) -> None:
    names = {entry["name"] for entry in kube.api_resources("", "v1")}
    assert {"pods", "pods/status", "namespaces", "endpoints"} <= names
    assert kube.api_resources("nosuch.example.com", "v1") == []


def test_an_unreachable_server_is_an_error_and_is_not_cached() -> None:
    with serve() as stopped:
        url = stopped.url
    with KubeClient.from_url(url, timeout_seconds=2) as kube:
        discovery = Discovery(kube)
        with pytest.raises(KubernetesUnavailable, match="API resource list of apps/v1"):
            discovery.resolve("apps/v1", "Deployment")
        with pytest.raises(KubernetesUnavailable):
            discovery.resolve("apps/v1", "Deployment")  # asked again, not answered from a cache


class Listing:
    """A stand-in client: one APIResourceList, subresources first (order is the server's choice)."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        self.calls = 0

    def api_resources(self, group: str, version: str) -> list[dict[str, Any]]:
        self.calls += 1
        return self.entries


def test_subresources_and_unusable_entries_are_skipped() -> None:
    source = Listing(
        [
            {"name": "deployments/scale", "kind": "Scale", "namespaced": True, "group": "autoscaling"},
            {"name": "deployments/status", "kind": "Deployment", "namespaced": True},
            {"name": "", "kind": "Broken"},
            {"kind": "NoName"},
            {"name": "deployments", "kind": "Deployment", "namespaced": True},
        ]
    )
    discovery = Discovery(source)
    assert discovery.resolve("apps/v1", "Deployment") == ApiResource("apps", "v1", "deployments", "Deployment", True)
    for kind in ("Scale", "Broken", "NoName"):
        assert discovery.resolve("apps/v1", kind) is None
    assert source.calls == 1
    discovery.forget()
    assert discovery.resolve("apps/v1", "Deployment") is not None
    assert source.calls == 2
