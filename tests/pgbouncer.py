"""A real PgBouncer (Debian's ``pgbouncer`` package) in transaction pooling mode, in front of the
tests' PostgreSQL: ``make test`` installs the package when it is missing (as root, with apt-get).
Never skipped: without the binary the test fails, saying how to install it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg

INSTALL = "install Debian's pgbouncer package: `make test` does it as root, or run `sudo apt-get install pgbouncer`"


def pgbouncer_binary() -> str:
    found = shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(p, os.X_OK)), None
    )
    if found is None:
        raise RuntimeError(f"pgbouncer is not installed: {INSTALL}")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _quote(value: str) -> str:
    return value.replace('"', '""')


@contextlib.contextmanager
def pgbouncer(server_dsn: str, *, pool_size: int = 20) -> Iterator[tuple[str, str]]:
    """PgBouncer in transaction mode forwarding every database of ``server_dsn``'s server; yields
    ``(template, log_path)`` where ``template.format(database=NAME)`` is a DSN through it."""
    binary = pgbouncer_binary()
    server = psycopg.conninfo.conninfo_to_dict(server_dsn)
    host = str(server.get("host") or "127.0.0.1")
    port = str(server.get("port") or 5432)
    user = str(server.get("user") or pwd.getpwuid(os.getuid()).pw_name)
    password = str(server.get("password") or "")
    listen = _free_port()
    folder = Path(tempfile.mkdtemp(prefix="finops-pgbouncer-"))
    run_as = ""
    if os.geteuid() == 0:  # PgBouncer refuses to run as root: it switches to this user (the
        # owner of a socket directory, e.g. the embedded server's, so it may connect there)
        if host.startswith("/"):
            run_as = pwd.getpwuid(os.stat(host).st_uid).pw_name
        else:
            run_as = next((name for name in ("postgres", "nobody") if _user_exists(name)), "nobody")
    target = f"host={host} port={port}" + (f" password={password}" if password else "")
    (folder / "userlist.txt").write_text(f'"{_quote(user)}" "{_quote(password)}"\n')
    (folder / "pgbouncer.ini").write_text(
        "\n".join(
            [
                "[databases]",
                f"* = {target}",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                f"listen_port = {listen}",
                "unix_socket_dir =",
                "auth_type = trust",
                f"auth_file = {folder / 'userlist.txt'}",
                "pool_mode = transaction",
                f"default_pool_size = {pool_size}",
                "max_client_conn = 500",
                "ignore_startup_parameters = extra_float_digits",
                f"logfile = {folder / 'pgbouncer.log'}",
                f"pidfile = {folder / 'pgbouncer.pid'}",
                *([f"user = {run_as}"] if run_as else []),
                "",
            ]
        )
    )
    if run_as:
        entry = pwd.getpwnam(run_as)
        for path in (folder, *folder.iterdir()):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    with (folder / "stdout.txt").open("wb") as output:
        process = subprocess.Popen([binary, str(folder / "pgbouncer.ini")], stdout=output, stderr=subprocess.STDOUT)
    auth = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    template = f"postgresql://{auth}@127.0.0.1:{listen}/{{database}}"
    try:
        _wait_listening(listen, process, folder)
        yield template, str(folder / "pgbouncer.log")
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _wait_listening(port: int, process: subprocess.Popen[bytes], folder: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            text = " ".join(p.read_text() for p in (folder / "stdout.txt", folder / "pgbouncer.log") if p.exists())
            raise RuntimeError(f"pgbouncer exited with {process.returncode}: {text}".strip())
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"pgbouncer is not listening on port {port} after 15 s")
