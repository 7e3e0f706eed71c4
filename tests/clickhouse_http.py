"""ClickHouse's HTTP interface over chDB, for the tests of the ClickHouse server reader
(``infra.fleet.clickhouse.ClickHouseServerReader``): no ClickHouse server can be installed here (Debian 12's
``clickhouse-server`` is 18.16, older than Parquet over S3; PyPI has none), so the queries
clickhouse-connect sends are run by ClickHouse's own engine in process, and answered as a server
answers them: the body in the format the query names, a failure as a 500 with ClickHouse's
``Code: N. DB::Exception: ...`` text. Only one user is known, with a password (Basic auth or
ClickHouse's ``X-ClickHouse-User``/``X-ClickHouse-Key`` headers). Settings passed in the URL are
ignored (the queries name what they need)."""

from __future__ import annotations

import base64
import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

USER, PASSWORD = "fleet", "s3cr3t-ch-password"


@contextlib.contextmanager
def chdb_over_http() -> Iterator[str]:
    """Serve; yield the server's URL without credentials (``http://127.0.0.1:PORT``)."""
    import chdb

    lock = threading.Lock()  # chDB runs one query at a time per process

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _authorized(self) -> bool:
            basic = self.headers.get("Authorization", "").removeprefix("Basic ")
            if basic:
                user, _, key = base64.b64decode(basic).decode().partition(":")
            else:
                user, key = self.headers.get("X-ClickHouse-User", ""), self.headers.get("X-ClickHouse-Key", "")
            return (user, key) == (USER, PASSWORD)

        def _query(self) -> None:
            if not self._authorized():
                self._answer(401, b"Code: 516. DB::Exception: fleet: Authentication failed. (AUTHENTICATION_FAILED)")
                return
            params = {key: values[-1] for key, values in parse_qs(urlsplit(self.path).query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            query = (params.get("query", "") + "\n" + self.rfile.read(length).decode()).strip()
            try:
                with lock:
                    body = chdb.query(query, params.get("default_format", "TabSeparated")).bytes()
            except Exception as exc:
                self._answer(500, f"Code: 1001. DB::Exception: {exc}".encode())
                return
            self._answer(200, body)

        do_GET = do_POST = _query

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
