"""We test, over HTTP through the product's ``infra.kube.KubeClient``, that the sandbox API server
prunes and validates custom resources whose CRD it serves (``sandbox.kube.schema``):

- a ``/status`` merge patch or replace the schema refuses is a 422 ``Invalid`` Status, which the
  client raises as ``finops.errors.InvalidInput`` naming the field, and nothing is stored;
- an undeclared status field is pruned silently (the answer and the stored object lack it);
- creates and main resource patches are validated the same way, and defaults are filled in;
- a kind whose CRD was never created is still stored as sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from finops.errors import InvalidInput
from infra.kube import KubeClient
from sandbox import kube as sandbox_kube
from tests.unit.test_kube_schema import API, GROUP, widget, widget_crd


@pytest.fixture
def served() -> Iterator[tuple[sandbox_kube.KubeServer, KubeClient]]:
    with sandbox_kube.serve(objects=[widget_crd(), widget()]) as server, KubeClient.from_url(server.url) as client:
        yield server, client


def stored(server: sandbox_kube.KubeServer) -> dict[str, Any]:
    obj = server.store.get(API, "widgets", "ns", "w")
    assert obj is not None
    return obj


def test_a_rejected_status_patch_is_invalid_input_naming_the_field(
    served: tuple[sandbox_kube.KubeServer, KubeClient],
) -> None:
    server, client = served
    with pytest.raises(InvalidInput) as caught:
        client.patch_status(GROUP, "v1", "widgets", "ns", "w", {"status": {"ready": True}})
    message = str(caught.value)
    assert 'Widget.example.com "w" is invalid: status.ready: Invalid value: "boolean"' in message, message
    assert "status.ready in body must be of type string" in message
    assert "status" not in stored(server)


def test_an_undeclared_status_field_is_pruned(served: tuple[sandbox_kube.KubeServer, KubeClient]) -> None:
    server, client = served
    answer = client.patch_status(GROUP, "v1", "widgets", "ns", "w", {"status": {"ready": "True", "seen": 4}})
    assert answer["status"] == {"ready": "True"} == stored(server)["status"]
    assert [(p.kind, p.path, p.value) for p in server.store.schemas.pruned] == [("Widget", "status.seen", 4)]


def test_creates_and_patches_are_validated_and_defaulted(served: tuple[sandbox_kube.KubeServer, KubeClient]) -> None:
    server, client = served
    with pytest.raises(InvalidInput, match=r"spec\.size: Required value"):
        client.create_object(GROUP, "v1", "widgets", "ns", {**widget("x"), "spec": {"colour": "red"}})
    created = client.create_object(GROUP, "v1", "widgets", "ns", widget("y", junk=True))
    assert created["spec"] == {"size": 3, "colour": "red"}
    with pytest.raises(InvalidInput, match=r'spec\.colour: Unsupported value: "green"'):
        client.patch_object(GROUP, "v1", "widgets", "ns", "y", {"spec": {"colour": "green"}})
    assert stored(server)["spec"] == {"size": 3, "colour": "red"}


def test_a_kind_without_a_crd_is_stored_as_sent() -> None:
    loose = {"apiVersion": "other.io/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "ns"}}
    with sandbox_kube.serve(objects=[loose]) as server, KubeClient.from_url(server.url) as client:
        answer = client.patch_status("other.io", "v1", "gadgets", "ns", "g", {"status": {"ready": True, "x": 1}})
    assert answer["status"] == {"ready": True, "x": 1}
