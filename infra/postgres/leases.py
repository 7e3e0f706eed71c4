"""Leases: named locks that work through PgBouncer's transaction pooling.

A session-level advisory lock belongs to a server connection, and behind transaction pooling the
next transaction may run on another one (or another client's transaction on ours), so it is
either lost or held by the wrong client. A lease is a row in ``leases`` with a holder and an
expiry, claimed and released in short transactions. While held, a daemon thread renews it every
third of its duration; a holder that dies frees it when it expires (``seconds`` after the last
renewal).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from finops.errors import FinOpsError
from infra.postgres.database import Database

log = logging.getLogger(__name__)


class Lease:
    def __init__(self, db: Database, name: str, seconds: float) -> None:
        self.db = db
        self.name = name
        self.seconds = seconds
        self.holder = str(uuid.uuid4())

    def claim(self) -> bool:
        """Take (or renew) the lease; False while another holder's lease has not expired."""
        row = self.db.fetch_one("claim_lease", name=self.name, holder=self.holder, seconds=self.seconds)
        return row is not None

    def release(self) -> None:
        self.db.execute("release_lease", name=self.name, holder=self.holder)


@contextmanager
def held(lease: Lease) -> Iterator[Lease]:
    """Keep an already claimed ``lease`` renewed for the block, then release it."""
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(lease.seconds / 3):
            try:
                if not lease.claim():
                    log.warning("lease lost to another holder", extra={"fields": {"lease": lease.name}})
                    return
            except FinOpsError as exc:  # the database is away: the next renewal tries again
                log.warning("lease renewal failed", extra={"fields": {"lease": lease.name, "error": exc.message}})

    thread = threading.Thread(target=renew, name=f"lease-{lease.name}", daemon=True)
    thread.start()
    try:
        yield lease
    finally:
        stop.set()
        thread.join()
        lease.release()
