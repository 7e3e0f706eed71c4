"""Loading a policy file and rendering reports as a table, JSON or CSV.

An incomplete period is announced by one ``WARNING:`` line (``warning``): above the table, which
is read by people and should carry it wherever it is pasted; on stderr for JSON and CSV, whose
stdout stays parseable (JSON carries ``"coverage"`` itself).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from finops.chargeback import Report
from finops.coverage import Coverage
from finops.errors import InvalidInput
from finops.policy import Policy, parse_policy
from usecases.reports.text_table import render


def load_policy(path: str | Path) -> Policy:
    """Read and validate a policy YAML file; errors name the file and the key."""
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise InvalidInput(f"policy file {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise InvalidInput(f"policy file {path} is not valid YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise InvalidInput(f"policy file {path}: expected a mapping of policy keys")
    try:
        return parse_policy(document)
    except InvalidInput as exc:
        raise InvalidInput(f"policy file {path}: {exc.message}") from exc


def warning(coverages: Iterable[Coverage | None]) -> str | None:
    """One line naming the gaps of every incomplete period, or None when all are complete."""
    gaps = [coverage.summary() for coverage in coverages if coverage is not None and not coverage.complete]
    if not gaps:
        return None
    return f"WARNING: {' | '.join(gaps)}; the figures cover the collected hours only"


def chargeback_csv(report: Report) -> str:
    """The report's lines as CSV, with a final total row; amounts are decimal strings."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["owner", "allocated", "idle", "shared", "total", "share", "currency"])
    for line in report.lines:
        doc = line.as_document()
        writer.writerow(
            [doc["owner"], doc["allocated"], doc["idle"], doc["shared"], doc["total"], doc["share"], report.currency]
        )
    writer.writerow(["TOTAL", report.allocated, report.idle, report.shared, report.total, "1.0000", report.currency])
    return out.getvalue()


def chargeback_table(report: Report) -> str:
    rows: list[tuple[object, ...]] = [
        (li.owner, li.allocated, li.idle, li.shared, li.total, li.share) for li in report.lines
    ]
    rows.append(("TOTAL", report.allocated, report.idle, report.shared, report.total, ""))
    period = report.period.as_document()
    title = (
        f"Chargeback {period['start']} to {period['end']} ({report.currency}, basis {report.basis}), "
        f"clusters: {', '.join(report.clusters)}"
    )
    table = render(["owner", "allocated", "idle", "shared", "total", "share"], rows, right=(1, 2, 3, 4, 5))
    warned = warning([report.coverage])
    return (f"{warned}\n" if warned else "") + title + "\n" + table + _variance(report.reconciliation)


def _variance(summary: Any) -> str:
    """On a bill basis: which days the bill covered, and the variance per resource and per line."""
    if not summary:
        return ""
    parts = []
    for cluster in summary["clusters"]:
        billed = ", ".join(f"{r['start']}..{r['end']}" for r in cluster["billed_days"]) or "none"
        estimated = ", ".join(f"{r['start']}..{r['end']}" for r in cluster["estimated_days"]) or "none"
        parts.append(
            f"\n{cluster['cluster']}: billed days {billed}; on estimate {estimated}; "
            f"unreconciled {cluster['unreconciled']} ({len(cluster['unreconciled_lines'])} lines)"
        )
        resources = [
            (
                r["kind"],
                r["name"] or "(no node)",
                r["provider_id"],
                r["estimate"],
                r["billed"],
                r["variance"],
                r["status"],
            )
            for r in cluster["resources"]
        ]
        head = ["kind", "name", "provider id", "estimate", "billed", "variance", "status"]
        parts.append(render(head, resources, right=(3, 4, 5)))
    lines = [(li["owner"], li["estimate"], li["total"], li["variance"]) for li in summary["lines"]]
    parts.append(
        "\nPer line, against the estimate:\n"
        + render(["owner", "estimate", summary["basis"], "variance"], lines, right=(1, 2, 3))
    )
    return "\n" + "\n".join(parts)


def as_json(document: Any) -> str:
    return json.dumps(document, indent=2, default=str)
