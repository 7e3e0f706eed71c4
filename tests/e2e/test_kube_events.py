"""Change events from the sandbox API server, as a Knative ``ApiServerSource`` delivers them.

The product's ``reconcile`` function is triggered by an ``ApiServerSource`` in ``Reference``
mode (knative/eventing/reconcile-source.yaml); these tests pin the events the sandbox sends
(types, binary-mode headers, the ``ObjectReference`` body, order) against a recording sink,
with every write going through the product's own Kubernetes client over HTTP.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from infra.kube import KubeClient
from sandbox.kube import KubeServer, KubeStore, serve
from sandbox.kube.events import EventSource, guess_resource, self_link

GROUP, VERSION = "finops.stakater.com", "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
FINALIZER = "finops.stakater.com/subscription"
WAIT = 30.0  # generous: wait_idle returns as soon as the queue is drained


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class Sink:
    """A tiny HTTP sink: records every request, answers with queued status codes (then 202)."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.answers: list[int] = []
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with sink._lock:
                    sink.requests.append(
                        Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    status = sink.answers.pop(0) if sink.answers else 202
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def types(self) -> list[str]:
        return [r.headers["ce-type"] for r in self.requests]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def sink() -> Iterator[Sink]:
    running = Sink()
    yield running
    running.close()


def delete(server: KubeServer, namespace: str, name: str) -> dict[str, Any]:
    """DELETE a Subscription over HTTP (the product's client never deletes, so the generated one)."""
    from kubernetes import client as k8s

    with k8s.ApiClient(k8s.Configuration(host=server.url)) as api:
        found: dict[str, Any] = k8s.CustomObjectsApi(api).delete_namespaced_custom_object(
            GROUP, VERSION, namespace, "subscriptions", name
        )
    return found


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with serve() as running:
        yield running


@pytest.fixture
def kube(server: KubeServer) -> Iterator[KubeClient]:
    with KubeClient.from_url(server.url, timeout_seconds=5) as client:
        yield client


def subscription(name: str, namespace: str = "team-a") -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Subscription",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"offering": "gold", "target": {"kind": "Namespace", "name": namespace}},
    }


def test_a_subscription_lifecycle_in_reference_mode(server: KubeServer, kube: KubeClient, sink: Sink) -> None:
    kube.create_object(GROUP, VERSION, "subscriptions", "team-a", subscription("before"))  # before attaching
    source = server.attach_events(sink.url, [(API_VERSION, "Subscription"), (API_VERSION, "Offering")])

    kube.create_object(GROUP, VERSION, "subscriptions", "team-a", subscription("gold"))
    kube.create_object(GROUP, VERSION, "costjobs", "team-a", {"metadata": {"name": "unwatched"}, "spec": {}})
    kube.patch_status(GROUP, VERSION, "subscriptions", "team-a", "gold", {"status": {"phase": "Active"}})
    kube.patch_status(GROUP, VERSION, "subscriptions", "team-a", "gold", {"status": {"phase": "Active"}})  # no-op
    kube.patch_object(GROUP, VERSION, "subscriptions", "team-a", "gold", {"metadata": {"finalizers": [FINALIZER]}})
    marked = delete(server, "team-a", "gold")
    assert marked["metadata"]["deletionTimestamp"]
    delete(server, "team-a", "gold")  # already deleting: nothing changes
    kube.patch_object(GROUP, VERSION, "subscriptions", "team-a", "gold", {"metadata": {"finalizers": None}})
    assert server.store.get(API_VERSION, "Subscription", "team-a", "gold") is None

    source.wait_idle(WAIT)
    assert sink.types() == [
        "dev.knative.apiserver.ref.add",
        "dev.knative.apiserver.ref.update",  # status subresource
        "dev.knative.apiserver.ref.update",  # finalizer added
        "dev.knative.apiserver.ref.update",  # deletionTimestamp set
        "dev.knative.apiserver.ref.delete",  # last finalizer removed
    ]
    reference = {"kind": "Subscription", "namespace": "team-a", "name": "gold", "apiVersion": API_VERSION}
    for request in sink.requests:
        assert request.method == "POST" and request.path == "/"
        assert request.body == json.dumps(reference, separators=(",", ":")).encode()  # field order as Go
        headers = request.headers
        assert headers["ce-specversion"] == "1.0"
        assert headers["ce-source"] == server.url
        assert headers["ce-subject"] == f"/apis/{API_VERSION}/namespaces/team-a/subscriptions/gold"
        assert headers["content-type"] == "application/json"
        assert (headers["ce-kind"], headers["ce-apiversion"]) == ("Subscription", API_VERSION)
        assert (headers["ce-name"], headers["ce-namespace"]) == ("gold", "team-a")
        assert headers["ce-time"].endswith("Z")
        uuid.UUID(headers["ce-id"])
    assert len({r.headers["ce-id"] for r in sink.requests}) == len(sink.requests)

    deliveries = source.deliveries
    assert [d.status for d in deliveries] == [202] * 5 and all(d.ok and d.attempts == 1 for d in deliveries)
    assert [d.event.id for d in deliveries] == [r.headers["ce-id"] for r in sink.requests]
    assert [e.type for e in source.events] == sink.types()


def test_a_delete_without_finalizers_is_one_delete_event(server: KubeServer, kube: KubeClient, sink: Sink) -> None:
    source = server.attach_events(sink.url, [(API_VERSION, "Subscription")])
    kube.create_object(GROUP, VERSION, "subscriptions", "team-b", subscription("silver", "team-b"))
    delete(server, "team-b", "silver")
    source.wait_idle(WAIT)
    assert sink.types() == ["dev.knative.apiserver.ref.add", "dev.knative.apiserver.ref.delete"]
    assert sink.requests[1].json == {
        "kind": "Subscription",
        "namespace": "team-b",
        "name": "silver",
        "apiVersion": API_VERSION,
    }


def test_cluster_scoped_objects_keep_the_adapters_subject_quirks(server: KubeServer, sink: Sink) -> None:
    source = server.attach_events(sink.url, [("v1", "Namespace")])
    server.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-c"}})
    source.wait_idle(WAIT)
    [request] = sink.requests
    assert request.headers["ce-subject"] == "/apis/v1/namespaces//namespaces/team-c"  # as createSelfLink builds it
    assert request.headers["ce-namespace"] == ""
    assert request.json == {"kind": "Namespace", "name": "team-c", "apiVersion": "v1"}  # omitempty namespace


def test_resource_mode_sends_the_whole_object(server: KubeServer, kube: KubeClient, sink: Sink) -> None:
    source = server.attach_events(sink.url, [(API_VERSION, "Subscription")], mode="Resource")
    created = kube.create_object(GROUP, VERSION, "subscriptions", "team-a", subscription("gold"))
    source.wait_idle(WAIT)
    [request] = sink.requests
    assert request.headers["ce-type"] == "dev.knative.apiserver.resource.add"
    assert request.json == created


def test_retriable_answers_are_retried_and_others_are_final(server: KubeServer, sink: Sink) -> None:
    source = server.attach_events(sink.url, [(API_VERSION, "Subscription")])
    sink.answers = [503, 429, 200, 500]
    server.store.create(subscription("retried"))
    server.store.create(subscription("refused"))
    source.wait_idle(WAIT)
    retried, refused = source.deliveries
    assert (retried.status, retried.attempts) == (200, 3)
    assert (refused.status, refused.attempts, refused.ok) == (500, 1, False)
    assert [r.headers["ce-id"] for r in sink.requests] == [retried.event.id] * 3 + [refused.event.id]


def test_an_unreachable_sink_is_recorded_not_raised(server: KubeServer, sink: Sink) -> None:
    url = sink.url
    sink.close()
    source = server.attach_events(url, [(API_VERSION, "Subscription")], retries=1)
    created = server.store.create(subscription("lost"))
    assert created["metadata"]["name"] == "lost"  # the write itself never waits for or fails on delivery
    source.wait_idle(WAIT)
    [delivery] = source.deliveries
    assert delivery.status is None and delivery.attempts == 2 and delivery.error


def test_stopping_the_server_stops_its_sources(sink: Sink) -> None:
    with serve() as server:
        source = server.attach_events(sink.url, [(API_VERSION, "Subscription")])
        server.store.create(subscription("one"))
        source.wait_idle(WAIT)
    assert not source.running
    server.store.create(subscription("after-stop"))
    source.wait_idle(WAIT)
    assert len(source.deliveries) == 1


def test_a_store_without_listeners_and_a_detached_source(sink: Sink) -> None:
    store = KubeStore()
    store.create(subscription("quiet"))  # no listener: nothing to notify
    source = EventSource(sink.url, [(API_VERSION, "Subscription")], source="http://sandbox").start()
    store.add_listener(source)
    store.patch(API_VERSION, "Subscription", "team-a", "quiet", {"metadata": {"labels": {"tier": "gold"}}})
    source.wait_idle(WAIT)
    store.remove_listener(source)
    store.delete(API_VERSION, "Subscription", "team-a", "quiet")
    source.wait_idle(WAIT)
    source.stop()
    assert sink.types() == ["dev.knative.apiserver.ref.update"]
    assert sink.requests[0].headers["ce-source"] == "http://sandbox"


@pytest.mark.parametrize(
    ("kind", "resource"),
    [
        ("Subscription", "subscriptions"),
        ("Policy", "policies"),
        ("Ingress", "ingresses"),
        ("Endpoints", "endpoints"),
        ("Gateway", "gatewaies"),
        ("Box", "boxs"),
    ],
)
def test_subjects_use_apimachinerys_unsafe_plural_guess(kind: str, resource: str) -> None:
    assert guess_resource(kind) == resource
    link = self_link("serving.knative.dev", kind, "ns", "x")  # a group with no version: the adapter's hack
    assert link == f"/apis/serving.knative.dev/versionUnknown/namespaces/ns/{resource}/x"
