"""A port that refuses connections for as long as a test needs it, and a proxy that fails uploads."""

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def refused_port() -> Iterator[int]:
    """A port of 127.0.0.1 held bound but never listening while the block runs: every connection
    to it is refused, and no other server of the test run can take it. (A port bound and released
    at once, then used as "nothing listens there", may be handed to the next server that binds
    port 0, which then answers.)"""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


class FaultProxy:
    """An HTTP proxy in front of an S3 endpoint (moto's) that fails uploads as ``mode`` says:
    ``pass`` forwards everything; ``503`` answers every PUT ``503 ServiceUnavailable``; ``drop``
    reads half of a PUT's body and closes the connection without an answer (a connection lost
    mid-upload); ``stall`` reads half of it and then answers nothing, holding the connection open
    until the proxy closes (a store that hangs mid-upload). Other requests are always forwarded.
    ``url`` is its endpoint."""

    def __init__(self, target: str) -> None:
        import http.client
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit

        self.mode = "pass"
        self.closing = threading.Event()
        proxy = self
        host = urlsplit(target).netloc

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if self.command == "PUT" and proxy.mode in ("drop", "stall"):
                    self.rfile.read(length // 2)
                    if proxy.mode == "stall":
                        proxy.closing.wait(60)
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                body = self.rfile.read(length) if length else None
                if self.command == "PUT" and proxy.mode == "503":
                    error = b"<Error><Code>ServiceUnavailable</Code><Message>injected</Message></Error>"
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(error)))
                    self.end_headers()
                    self.wfile.write(error)
                    return
                upstream = http.client.HTTPConnection(host, timeout=30)
                headers = {key: value for key, value in self.headers.items() if key.lower() != "host"}
                upstream.request(self.command, self.path, body=body, headers=headers | {"Host": host})
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()

            do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
