"""An address that refuses connections for as long as a test needs it."""

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def refused_url() -> Iterator[str]:
    """``http://127.0.0.1:<port>`` whose port stays bound but never listens while the block runs:
    every connection is refused, and no other server of the run can take the port (a port just
    released may be handed to the next server that binds port 0, which then answers)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"
