"""Runs one ``collect_allocations`` run in this process, and optionally kills it with SIGKILL.

``python -m tests.e2e.collect_driver --cluster C --scheduled T [--kill-at N] [--count]
[--fleet-bucket URL --fleet-endpoint URL]``, with
``DATABASE_URL``, ``OPENCOST_URL`` and ``KUBE_API_URL`` in the environment. Every database
statement the run makes is counted; with ``--kill-at N`` the process sends itself SIGKILL just
before the Nth (mid-transaction for most points, exactly as a pod killed by the kubelet's OOM
killer or a node loss), so the tests can stop a real run at any point. ``--count`` prints how many
statements a whole run makes.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

from finops.hours import parse_timestamp
from infra.kube import KubeClient
from infra.opencost import OpenCostClient
from infra.postgres import Database, connect
from usecases.collect_allocations.service import CollectOptions, FleetBucket, collect


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--scheduled", required=True)
    parser.add_argument("--lookback", type=int, default=6)
    parser.add_argument("--kill-at", type=int, default=0)
    parser.add_argument("--count", action="store_true")
    parser.add_argument("--fleet-bucket", default=None)
    parser.add_argument("--fleet-endpoint", default=None)
    parser.add_argument("--fleet-timeout", type=float, default=30.0)
    args = parser.parse_args()

    statements = 0

    def counted(method: Any) -> Any:
        def wrapper(*a: Any, **kw: Any) -> Any:
            nonlocal statements
            statements += 1
            if statements == args.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return method(*a, **kw)

        return wrapper

    for name in ("execute", "fetch_one", "fetch_all", "fetch_csv", "copy_rows"):
        setattr(Database, name, counted(getattr(Database, name)))
    db = connect(os.environ["DATABASE_URL"])
    options = CollectOptions(
        cluster=args.cluster,
        aggregation="namespace,controllerKind,controller,pod,container",
        hours_lookback=args.lookback,
        owner_label="team",
        cost_center_label="cost-center",
        fleet=None
        if args.fleet_bucket is None
        else FleetBucket(args.fleet_bucket, args.fleet_endpoint, args.fleet_timeout),
    )
    collect(
        db,
        OpenCostClient(os.environ["OPENCOST_URL"], retries=0),
        KubeClient.from_url(os.environ["KUBE_API_URL"]),
        options,
        scheduled=parse_timestamp(args.scheduled, field="scheduled"),
        now=datetime.now(UTC),
        run_id=str(uuid.uuid4()),
    )
    db.close()
    if args.count:
        print(statements)
    return 0


if __name__ == "__main__":
    sys.exit(main())
