"""A port that refuses connections for as long as a test needs it."""

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
