"""Where the functions a test serves write their logs: ``.local/test-logs/<worker>/``, one folder
per pytest-xdist worker (``make test`` runs one per core), so a test that reads a function's log
never reads another worker's lines."""

from __future__ import annotations

import os
from pathlib import Path

LOG_DIR = Path(__file__).resolve().parents[1] / ".local" / "test-logs" / os.environ.get("PYTEST_XDIST_WORKER", "main")
