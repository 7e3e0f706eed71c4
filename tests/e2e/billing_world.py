"""The billing world the billing end-to-end tests share: an active PriceBook, the Offering
``finops/gold`` (an hourly fee and a cpuHour meter), Subscriptions ``team-{n % 5}/sub-{n}`` metering
``app-{n}``, and allocation rows with final ledger hours for those apps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from finops.hours import HOUR, Hour
from infra.postgres import Database

FB = "finops.stakater.com/v1alpha1"
AGG = "namespace,controllerKind,controller,pod,container"
PINNED = Hour(datetime(2026, 11, 20, 10, tzinfo=UTC))
ACTIVATED = PINNED.start - 3 * HOUR + timedelta(minutes=30)
PRICEBOOK = {
    "apiVersion": FB,
    "kind": "PriceBook",
    "metadata": {"name": "standard", "namespace": "finops"},
    "spec": {"currency": "USD", "valuationMode": "currency", "rates": {"cpuHour": "0.04", "ramGbHour": "0.005"}},
}
OFFERING = {
    "apiVersion": FB,
    "kind": "Offering",
    "metadata": {"name": "gold", "namespace": "finops"},
    "spec": {
        "pricing": {
            "subscriptionFee": {"priceMicros": 1_000_000, "period": "1h", "tickAlignment": "ActivatedAt"},
            "resourcePricing": [{"name": "cpuHour", "margins": {"factorMilli": 1500}}],
        }
    },
}


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def subscription(n: int, activated: datetime | None = ACTIVATED, **spec: Any) -> dict[str, Any]:
    sub: dict[str, Any] = {
        "apiVersion": FB,
        "kind": "Subscription",
        "metadata": {"name": f"sub-{n}", "namespace": f"team-{n % 5}"},
        "spec": {
            "offeringRef": {"name": "gold", "namespace": "finops"},
            "usageSources": [{"resourceType": "Deployment", "name": f"app-{n}"}],
            **spec,
        },
    }
    if activated is not None:
        sub["status"] = {"activatedAt": iso(activated), "ready": "True"}
    return sub


def usage(db: Database, n: int, first: datetime, last: datetime) -> None:
    """Final ledger hours from ``first`` through ``last``, each with a row of every app-i using half
    a core, stamped with a PriceBook of 0.04 a core-hour."""
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode, cpu_hour,"
            " spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour, network_gib)"
            " VALUES ('c', 'finops', 'b', 'u', 'f', 'USD', 'currency', 0.04, 0, 0, 0, 0, 0, 0) ON CONFLICT DO NOTHING"
        )
        book = conn.execute("SELECT id FROM pricebooks WHERE cluster = 'c'").fetchone()
        assert book is not None
        conn.execute("SELECT finops_ensure_allocation_partition(%s)", (first,))
        conn.execute("SELECT finops_ensure_allocation_partition(%s)", (last,))
        conn.execute(
            "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count)"
            " SELECT 'c', %s, h, 'final', %s FROM generate_series(%s::timestamptz, %s, interval '1 hour') h"
            " ON CONFLICT (cluster, aggregation, hour) DO UPDATE SET state = 'final'",
            (AGG, n, first, last),
        )
        conn.execute(
            "INSERT INTO provider_allocations (cluster, namespace, name, aggregation, hour, entry_kind,"
            " controller_kind, controller, pod, cpu_core_usage_avg, minutes, pricebook_id, is_finalized)"
            " SELECT 'c', 'team-' || i %% 5, 'app-' || i, %s, h, 'workload', 'deployment', 'app-' || i,"
            " 'app-' || i || '-pod', 0.5, 60, %s, true"
            " FROM generate_series(0, %s - 1) i, generate_series(%s::timestamptz, %s, interval '1 hour') h"
            " ON CONFLICT DO NOTHING",
            (AGG, book["id"], n, first, last),
        )
