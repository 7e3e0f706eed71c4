"""Cloud estimates that CI pushes for an application (Infracost's JSON, parsed by
``finops.cloud_estimates``): stored whole per source, read back for the Cost tab with their age."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import Any

from finops.cloud_estimates import Estimate, text_of
from finops.errors import NotFound
from finops.money import format_amount, to_micros
from infra.postgres import Database

CLOUD_ESTIMATE_BODY = 10 * 1024 * 1024  # bytes: the push's body limit
STALE_AFTER_SECONDS = 7 * 24 * 3600  # the tab warns about an estimate CI has not refreshed in a week
COLUMNS = (
    "cluster",
    "app_namespace",
    "app_name",
    "source",
    "position",
    "project",
    "path",
    "depth",
    "monthly_cost",
    "hourly_cost",
    "components",
)


def money(value: Decimal | None) -> dict[str, Any] | None:
    """An exact amount: rounded once for display, in micros, and as the tool stated it."""
    if value is None:
        return None
    micros = to_micros(value)
    return {"amount": format_amount(micros), "micros": micros, "exact": text_of(value)}


def store(
    db: Database, cluster: str, app: tuple[str, str], source: str, estimate: Estimate, received_at: datetime
) -> bool:
    """Replace the key's estimate and resources whole (one transaction, under the key's lock);
    True when the content differs from what was stored."""
    key = {"cluster": cluster, "app_namespace": app[0], "app_name": app[1], "source": source}
    rows = [
        (
            cluster,
            app[0],
            app[1],
            source,
            position,
            r.project,
            list(r.path),
            r.depth,
            r.monthly_cost,
            r.hourly_cost,
            json.dumps([c.document() for c in r.components]),
        )
        for position, r in enumerate(estimate.resources)
    ]
    with db.connection() as conn:
        db.execute("lock_cloud_estimate", conn, **key)
        result = db.fetch_one(
            "upsert_cloud_estimate",
            conn,
            **key,
            currency=estimate.currency,
            tool_version=estimate.tool_version,
            generated_at=estimate.generated_at,
            monthly=estimate.monthly,
            stated_monthly=estimate.stated_monthly,
            projects=json.dumps(estimate.projects_document()),
            resource_count=estimate.top_level,
            unpriced_count=estimate.unpriced,
            digest=estimate.digest,
            received_at=received_at,
        )
        db.execute("delete_cloud_estimate_resources", conn, **key)
        db.copy_rows(conn, "cloud_estimate_resources", COLUMNS, rows)
    return bool(result and result["changed"])


def _summary(row: dict[str, Any]) -> dict[str, Any]:
    age = int(row["age_seconds"])
    return {
        "source": row["source"],
        "currency": row["currency"].strip(),
        "monthly": money(row["monthly"]),
        "statedMonthly": money(row["stated_monthly"]),
        "resources": row["resource_count"],
        "unpriced": row["unpriced_count"],
        "projects": row["projects"],
        "generatedAt": None if row["generated_at"] is None else row["generated_at"].isoformat(),
        "receivedAt": row["received_at"].isoformat(),
        "changedAt": row["changed_at"].isoformat(),
        "ageSeconds": age,
        "stale": age > STALE_AFTER_SECONDS,
    }


def summaries(db: Database, cluster: str, identity: tuple[str, str]) -> list[dict[str, Any]]:
    """The ``cloudEstimates`` member of ``/actual``: one entry per source, with its age."""
    rows = db.fetch_all("app_cloud_estimates", cluster=cluster, app_namespace=identity[0], app_name=identity[1])
    return [_summary(row) for row in rows]


def listing(db: Database, cluster: str, identity: tuple[str, str]) -> dict[str, Any]:
    """``GET .../cloud-estimate``: every estimate of the application with its resources."""
    estimates = summaries(db, cluster, identity)
    if not estimates:
        raise NotFound(f"no cloud estimate for application {identity[0]}/{identity[1]} yet (CI pushes them)")
    resources = db.fetch_all(
        "app_cloud_estimate_resources", cluster=cluster, app_namespace=identity[0], app_name=identity[1]
    )
    for estimate in estimates:
        estimate["items"] = [
            {
                "project": r["project"],
                "name": r["path"][-1],
                "path": r["path"],
                "depth": r["depth"],
                "monthly": money(r["monthly_cost"]),
                "hourly": text_of(r["hourly_cost"]),
                "components": r["components"],
            }
            for r in resources
            if r["source"] == estimate["source"]
        ]
    return {"app": {"namespace": identity[0], "name": identity[1]}, "estimates": estimates}
