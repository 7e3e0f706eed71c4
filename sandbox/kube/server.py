"""The sandbox API server on a real socket (``serve``), in a ``sandbox.serving.ThreadedServer``."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from werkzeug.serving import BaseWSGIServer, make_server

from sandbox.kube.app import make_app
from sandbox.kube.events import DEFAULT_RETRIES, REFERENCE, EventSource, Mode
from sandbox.kube.seed import load_manifests
from sandbox.kube.store import KubeStore
from sandbox.serving import QuietHandler, ThreadedServer

log = logging.getLogger("sandbox.kube")


class _RequestLog(QuietHandler):
    """Request lines go to our logger at DEBUG instead of werkzeug's stderr handler."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        log.debug("%s %s", self.requestline, code)


class KubeServer(ThreadedServer):
    """A running sandbox API server: ``url`` (for ``kubernetes.client.Configuration(host=url)``),
    ``store`` and ``stop()``."""

    def __init__(self, store: KubeStore, server: BaseWSGIServer) -> None:
        super().__init__(server, "sandbox-kube", poll_interval=0.02)
        self.store = store
        self._event_sources: list[EventSource] = []

    def attach_events(
        self,
        sink_url: str,
        resources: Iterable[tuple[str, str]],
        *,
        mode: Mode = REFERENCE,
        retries: int = DEFAULT_RETRIES,
    ) -> EventSource:
        """Deliver later changes of ``resources`` (``(apiVersion, kind)`` pairs) to ``sink_url`` as a
        Knative ``ApiServerSource`` in ``mode`` would (``sandbox.kube.events``); ``stop()`` ends it."""
        source = EventSource(sink_url, resources, source=self.url, mode=mode, retries=retries).start()
        self.store.add_listener(source)
        self._event_sources.append(source)
        return source

    def detach_events(self, source: EventSource) -> None:
        """Stop ``source``: no more events are queued, undelivered ones are dropped."""
        self.store.remove_listener(source)
        if source in self._event_sources:
            self._event_sources.remove(source)
            source.stop()

    def stop(self) -> None:
        for source in list(self._event_sources):
            self.detach_events(source)
        super().stop()


def serve(
    *,
    seed_dir: Path | None = None,
    objects: Iterable[dict[str, Any]] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
) -> KubeServer:
    """Seed a store (manifests of ``seed_dir``, then ``objects``, e.g. ``sandbox.cluster.cluster_objects``
    of a scenario) and serve it in a daemon thread; ``port=0`` picks a free port."""
    store = KubeStore()
    if seed_dir is not None:
        store.apply_manifests(load_manifests(Path(seed_dir)))
    if objects is not None:
        store.apply_manifests(objects)
    server = make_server(host, port, make_app(store), threaded=True, request_handler=_RequestLog)
    return KubeServer(store, server).start()
