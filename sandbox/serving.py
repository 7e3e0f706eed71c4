"""What every sandbox server shares: ``StopOnExit`` and a werkzeug server's ``ThreadedServer``."""

from __future__ import annotations

import functools
import threading
from typing import Self

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler


class StopOnExit:
    """``with serve(...) as server:`` calls ``server.stop()`` when the block ends, however it ends."""

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class QuietHandler(WSGIRequestHandler):
    """Request lines are not printed (werkzeug's default: stderr); tests, benchmarks and
    ``finops run``'s terminal do not want them."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


class ThreadedServer(StopOnExit):
    """A bound werkzeug server: ``host``, ``port``, ``url``; ``start()`` serves it in a daemon
    thread, ``stop()`` (safe to call twice) stops serving and releases the port."""

    def __init__(self, server: BaseWSGIServer, name: str, poll_interval: float = 0.05) -> None:
        self._server = server
        self._thread = threading.Thread(
            target=functools.partial(server.serve_forever, poll_interval=poll_interval),
            name=f"{name}-{server.server_port}",
            daemon=True,
        )
        self._stopped = False

    @property
    def host(self) -> str:
        return str(self._server.host)

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()
