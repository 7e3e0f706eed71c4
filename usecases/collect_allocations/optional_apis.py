"""OpenCost APIs an hour can do without (``/assets``, ``/assets/carbon``): an OpenCost that answers
404 for one stores its hours without it, and says so once per OpenCost URL and process.

Why once and not per hour: a collector catching up on a backlog would repeat the same line for
every hour, and the line is about OpenCost's configuration, which no hour changes. The hours that
lack the data are named by the ledger and the reports, not by the log.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class OptionalApi:
    """One optional OpenCost API: ``missing`` logs ``message`` the first time a URL lacks it."""

    def __init__(self, message: str) -> None:
        self.message = message
        self._warned: set[str] = set()  # OpenCost URLs already reported

    def missing(self, base_url: str, error: Exception) -> None:
        """Log the warning unless this OpenCost URL was already reported by this process."""
        if base_url in self._warned:
            return
        self._warned.add(base_url)
        log.warning(self.message, extra={"fields": {"opencost": base_url, "error": str(error)}})
