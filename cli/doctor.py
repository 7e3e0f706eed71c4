"""``finops doctor``: the checks an operator runs first, one line each (``DOCTOR_DESCRIPTION``)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from cli import exits

DOCTOR_DESCRIPTION = """\
Check an install, read-only, one line per check (OK, WARN or FAIL and why):

  database            DATABASE_URL reachable (host, port and database named; never the password)
  schema              the database schema at the version this image ships
  opencost            OPENCOST_URL reachable, its version, and whether it honours filter=
  (or prometheus)     with ALLOCATION_SOURCE=prometheus: PROMETHEUS_URL reachable, its version
  kubernetes          the API server reachable (KUBE_API_URL, else in-cluster, else KUBECONFIG)
  rbac FUNCTION       each function's permissions: a SelfSubjectAccessReview per verb, asked as
                      its ServiceAccount (Impersonate-User: system:serviceaccount:finops:NAME)
  pricing             the active pricing source and its currency
  ledger              the newest final hour, and any lost hours
  owner labels        the share of the last 7 days' cost in namespaces without the owner label

It reads the collect_allocations environment (DATABASE_URL, CLUSTER_ID, OPENCOST_URL, ...; PING_TOKEN
is not needed) and the finops-billing ConfigMap's (OPENCOST_NAMESPACE, ...). Each check runs on its
own: a check needing a part whose own check failed says "skipped" (WARN). The rbac checks need an
account that may impersonate the functions' ServiceAccounts (a cluster admin's). Nothing is written.
Exit status: 0 when no check failed (warnings included), 4 when one did."""

DOCTOR_EXAMPLES = """\
examples:
  finops doctor
  finops doctor --format json | jq '.checks[] | select(.status != "OK")'"""


def cmd_doctor(args: argparse.Namespace) -> int:
    from usecases.doctor import run

    report = run(_parts())
    if args.format == "json":
        print(json.dumps(report.as_document(), indent=2))
    else:
        width = max(len(c.name) for c in report.checks)
        for check in report.checks:
            print(f"{check.status:<4}  {check.name:<{width}}  {check.detail}")
    return exits.NO_ANSWER if report.failed else exits.OK


def _parts() -> Any:
    from cli.database import open_database
    from infra.clients import kube_from
    from infra.postgres import address
    from infra.settings import BillingSettings, CollectAllocationsSettings, CommonSettings, KubeSettings, load
    from infra.settings import database_url as configured_url
    from usecases.doctor import Opened, Parts

    def database() -> Opened:
        url = configured_url()
        settings = load(CommonSettings, {**os.environ, "DATABASE_URL": url})
        return Opened(open_database(schema=False), address(url), settings.CLUSTER_ID)

    def source() -> CollectAllocationsSettings:
        # Only the source's settings matter here (the database has its own check; no ping is sent).
        return load(
            CollectAllocationsSettings,
            {"PING_TOKEN": "unused-by-the-doctor", "DATABASE_URL": "unused-by-this-check", **os.environ},
        )

    return Parts(
        database=database,
        source=source,
        kube=lambda: kube_from(load(KubeSettings, os.environ)),
        billing=lambda: load(BillingSettings, os.environ),
    )


def add_commands(sub: Any) -> None:
    doctor = sub.add_parser(
        "doctor",
        help="check an install: database, schema, OpenCost, Kubernetes and RBAC, pricing, ledger",
        description=DOCTOR_DESCRIPTION,
        epilog=DOCTOR_EXAMPLES,
    )
    doctor.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    doctor.set_defaults(func=cmd_doctor)
