"""Child processes that end with whatever started them: a ``finops run`` or a test session stopped
with SIGKILL runs no cleanup, so without this its functions and its Prometheus kept serving."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def dies_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` under which the child is sent SIGTERM when the thread that started it ends
    (Linux's ``PR_SET_PDEATHSIG``; gunicorn's master stops its workers on SIGTERM, Prometheus shuts
    down). None on another system, or off the main thread, whose end would stop the child early."""
    if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork, not in the child
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the call: nothing would signal us
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not ended within 10 seconds."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
