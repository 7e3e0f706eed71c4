"""Change events as Knative Eventing's ``ApiServerSource`` delivers them, from the sandbox store.

In a cluster, an ``ApiServerSource`` adapter watches the resources it is given and POSTs one
CloudEvent per watch event (ADDED, MODIFIED, DELETED) to its sink; ``knative/eventing/
reconcile-source.yaml`` wires the product's ``reconcile`` function that way. An ``EventSource``
is told of every committed change by ``KubeStore`` (``KubeStore.add_listener``) and delivers the
events of the watched kinds from one background thread, in resourceVersion order.

The events copy knative.dev/eventing ``pkg/adapter/apiserver/events/events.go`` (``makeEvent``,
``getRef``, ``createSelfLink``) and ``pkg/apis/sources/constants.go``:

* ``type``: ``dev.knative.apiserver.ref.{add,update,delete}`` in ``Reference`` mode,
  ``dev.knative.apiserver.resource.{add,update,delete}`` in ``Resource`` mode;
* ``source``: the API server's URL (the adapter's ``rest.Config.Host``);
* ``subject``: ``/apis/{apiVersion}/namespaces/{namespace}/{guessed plural}/{name}``, with
  apimachinery's ``UnsafeGuessKindToResource`` plural and ``/apis/`` even for the core group;
* extensions ``kind``, ``apiversion``, ``name``, ``namespace`` (empty when cluster-scoped);
* data (``application/json``): in ``Reference`` mode a ``corev1.ObjectReference`` with only
  ``kind``, ``namespace``, ``name`` and ``apiVersion`` (no ``uid``, no ``resourceVersion``;
  an empty namespace is omitted), in that field order; in ``Resource`` mode the whole object.

Delivery is CloudEvents HTTP binary mode (``ce-*`` headers, JSON body), as sdk-go's HTTP
sender does, with a fresh UUID ``id`` and the current ``time``. Like the adapter (sdk-go
``ContextWithRetriesExponentialBackoff(50ms, 5)``), a delivery that fails to connect or is
answered 404, 413, 425, 429, 502, 503 or 504 is retried up to 5 times after 100, 200, 400,
800 and 1600 ms; any other answer is final. The apiVersion of an event is the watched one: the
store keeps one copy per object whatever version wrote it, like a CRD served in several versions.

Nothing is sent for objects that exist when the source is attached (the adapter's initial
list is not turned into events either), and the store sends no update for a write that
changed nothing but the resourceVersion, as the apiserver emits no watch event for a no-op.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import httpx

from sandbox.kube.objects import Obj
from sandbox.kube.resources import split_api_version
from sandbox.kube.store import Change

log = logging.getLogger("sandbox.kube.events")

Mode = Literal["Reference", "Resource"]
REFERENCE: Mode = "Reference"
RESOURCE: Mode = "Resource"

EVENT_TYPE_PREFIX: dict[Mode, str] = {
    REFERENCE: "dev.knative.apiserver.ref.",
    RESOURCE: "dev.knative.apiserver.resource.",
}

# sdk-go's HTTP protocol retries only these answers (and failures to get one).
RETRIABLE_STATUS = frozenset({404, 413, 425, 429, 502, 503, 504})
DEFAULT_RETRIES = 5
BACKOFF_SECONDS = 0.05


def guess_resource(kind: str) -> str:
    """apimachinery's ``meta.UnsafeGuessKindToResource``, which the adapter uses for ``subject``.

    Deliberately not the sandbox's own ``guess_plural``: ``Gateway`` → ``gatewaies`` here.
    """
    singular = kind.lower()
    if not singular or singular.endswith("endpoints"):
        return singular
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"


def self_link(api_version: str, kind: str, namespace: str, name: str) -> str:
    """The adapter's ``createSelfLink``: the event's ``subject``."""
    version = api_version
    if "." in version and "/" not in version:
        version += "/versionUnknown"
    return f"/apis/{version}/namespaces/{namespace}/{guess_resource(kind)}/{name}"


def object_reference(api_version: str, kind: str, namespace: str, name: str) -> Obj:
    """``corev1.ObjectReference`` as Go marshals the adapter's ``getRef``: field order, omitempty."""
    ref: Obj = {"kind": kind, "namespace": namespace, "name": name, "apiVersion": api_version}
    return {k: v for k, v in ref.items() if v}


def _rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class CloudEvent:
    """One CloudEvent 1.0 as the adapter builds it; ``headers()``/``body()`` are its binary mode."""

    id: str
    type: str
    source: str
    subject: str
    time: str
    data: Obj
    extensions: dict[str, str]
    sort_keys: bool = False  # Go marshals a map (Resource mode) with sorted keys, a struct in field order

    def headers(self) -> dict[str, str]:
        headers = {
            "ce-specversion": "1.0",
            "ce-id": self.id,
            "ce-source": self.source,
            "ce-type": self.type,
            "ce-subject": self.subject,
            "ce-time": self.time,
            "content-type": "application/json",
        }
        headers.update({f"ce-{name}": value for name, value in self.extensions.items()})
        return headers

    def body(self) -> bytes:
        return json.dumps(self.data, separators=(",", ":"), sort_keys=self.sort_keys).encode()


@dataclass(frozen=True)
class Delivery:
    """What became of one event: the sink's last status code (``None`` if it never answered)."""

    event: CloudEvent
    status: int | None
    attempts: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class EventSource:
    """An ``ApiServerSource`` for the sandbox: watches kinds in a ``KubeStore``, POSTs to ``sink``.

    ``resources`` are ``(apiVersion, kind)`` pairs, as in the source's ``spec.resources``.
    Attach with ``KubeServer.attach_events`` (or ``KubeStore.add_listener`` and ``start()``);
    ``wait_idle()`` blocks until every event so far has been delivered (or given up on), then
    ``deliveries`` and ``events`` tell what was sent. ``retries=0`` sends each event once.
    """

    def __init__(
        self,
        sink: str,
        resources: Iterable[tuple[str, str]],
        *,
        source: str,
        mode: Mode = REFERENCE,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        self.sink = sink
        self.source = source
        self.mode: Mode = mode
        self.retries = retries
        # (group, kind) → the watched apiVersion the events carry
        self._watched: dict[tuple[str, str], str] = {}
        for api_version, kind in resources:
            self._watched[(split_api_version(api_version)[0], kind)] = api_version
        self._client = httpx.Client(timeout=30.0)
        self._cond = threading.Condition()
        self._queue: deque[CloudEvent] = deque()
        self._busy = False  # an event has been taken off the queue and is being delivered
        self._stopping = False
        self._deliveries: list[Delivery] = []
        self._thread = threading.Thread(target=self._run, name="sandbox-kube-events", daemon=True)

    # ----------------------------------------------------------------- called by the store

    def changed(self, change: Change, obj: Obj) -> None:
        """Queue the event for a committed change (under the store's lock: no I/O, no waiting)."""
        kind = str(obj.get("kind", ""))
        api_version = self._watched.get((split_api_version(str(obj.get("apiVersion", "")))[0], kind))
        if api_version is None:
            return
        event = self.make_event(change, obj, api_version)
        with self._cond:
            if self._stopping:
                return
            self._queue.append(event)
            self._cond.notify_all()

    def make_event(self, change: Change, obj: Obj, api_version: str) -> CloudEvent:
        """The adapter's ``makeEvent`` for ``obj`` as read at ``api_version``."""
        meta = obj.get("metadata") or {}
        kind, name, namespace = str(obj.get("kind", "")), str(meta.get("name", "")), str(meta.get("namespace") or "")
        if self.mode == REFERENCE:
            data = object_reference(api_version, kind, namespace, name)
        else:
            data = copy.deepcopy(obj)
            data["apiVersion"] = api_version
        return CloudEvent(
            id=str(uuid.uuid4()),
            type=EVENT_TYPE_PREFIX[self.mode] + change,
            source=self.source,
            subject=self_link(api_version, kind, namespace, name),
            time=_rfc3339_now(),
            data=data,
            extensions={"kind": kind, "apiversion": api_version, "name": name, "namespace": namespace},
            sort_keys=self.mode == RESOURCE,
        )

    # ----------------------------------------------------------------- for tests

    @property
    def deliveries(self) -> list[Delivery]:
        """Every finished delivery so far, in the order the changes were committed."""
        with self._cond:
            return list(self._deliveries)

    @property
    def events(self) -> list[CloudEvent]:
        return [d.event for d in self.deliveries]

    def clear(self) -> None:
        """Forget the deliveries recorded so far (e.g. the ones a test's setup caused)."""
        with self._cond:
            self._deliveries.clear()

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Block until every queued event has been delivered; ``TimeoutError`` if not in time."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    pending = len(self._queue) + self._busy
                    raise TimeoutError(f"{pending} event(s) still undelivered to {self.sink} after {timeout}s")
                self._cond.wait(remaining)

    # ----------------------------------------------------------------- the sender thread

    def start(self) -> EventSource:
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop sending: queued events are dropped, as when an adapter pod goes away."""
        with self._cond:
            self._stopping = True
            dropped = len(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        if dropped:
            log.info("dropped %d undelivered event(s) for %s", dropped, self.sink)
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._client.close()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                event = self._queue.popleft()
                self._busy = True
            delivery = self._deliver(event)
            with self._cond:
                self._deliveries.append(delivery)
                self._busy = False
                self._cond.notify_all()

    def _deliver(self, event: CloudEvent) -> Delivery:
        headers, body = event.headers(), event.body()
        attempts, status, error = 0, None, None
        while True:
            attempts += 1
            try:
                status, error = self._client.post(self.sink, content=body, headers=headers).status_code, None
            except httpx.HTTPError as exc:
                status, error = None, f"{type(exc).__name__}: {exc}"
            if status is not None and status not in RETRIABLE_STATUS:
                break
            if attempts > self.retries or self._stopped():
                break
            time.sleep(BACKOFF_SECONDS * 2**attempts)
        if status is None or not 200 <= status < 300:
            log.warning(
                "event %s (%s %s) not accepted by %s: %s",
                event.id,
                event.type,
                event.subject,
                self.sink,
                error or status,
            )
        return Delivery(event, status, attempts, error)

    def _stopped(self) -> bool:
        with self._cond:
            return self._stopping
