"""``make bench``: every benchmark, each printing its ratio against a floor measured in the same run."""

from __future__ import annotations

import sys

from bench import chargeback, charges, fleet, focus_export, ingest, ingest_gpu, reconcile, rollups, webhook


def main() -> int:
    ingest.main()
    ingest_gpu.main()
    rollups.main()
    webhook.main()
    chargeback.main()
    reconcile.main()
    charges.main()
    focus_export.main()
    fleet.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
