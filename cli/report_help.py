"""The help texts and choices the ``finops report``, ``export`` and ``import`` parsers share
(``cli.reports``, ``cli.carbon_report``, ``cli.gpu_report``): one wording for one option across
every command, and the long descriptions and examples kept apart from the code that runs them.
"""

from __future__ import annotations

BASES = ("estimate", "billed", "amortised")
BASIS_HELP = (
    "what the figures stand on (default: the policy's reconciliation.basis); billed and amortised reconcile "
    "the days an imported bill covers to it"
)
REQUIRE_COMPLETE = "refuse (exit 4) unless every hour of the period is final and priced in every cluster"
S3_HELP = "an S3-compatible endpoint URL (default: AWS's)"
FLEET_HELP = (
    "read every cluster's final hours from this fleet bucket (FLEET_BUCKET of collect_allocations), on the "
    "estimate, instead of DATABASE_URL (the chargeback: through DuckDB, chDB or a ClickHouse server, --engine)"
)
CLUSTER_HELP = "one cluster (default: all, each settled on its own first)"
MONTH_HELP = "YYYY-MM (2026-10), last (the last full UTC month) or current"
LAST_MONTH_HELP = f"{MONTH_HELP} (default: last)"
FORMATS = ("table", "json", "csv")
FORMAT_HELP = "output format (default: table)"
BY_HELP = "one line per team (the owner label), cost centre or namespace (default: team)"
REPORT_DESCRIPTION = """\
Showback and chargeback reports from DATABASE_URL. A report that takes --policy reads it first,
so a bad policy is reported as such even without a database. Every report prints as a table, JSON
or CSV (--format); with JSON or CSV the coverage warning goes to stderr, so stdout stays parseable.
Exit 2 for bad input or policy or a --cluster the database does not know (the known ones are
listed), 4 when the period is refused (unpriced hours, or hours not final under
--require-complete)."""
EXPORT_DESCRIPTION = """\
Export a month's chargeback to a local file or to S3 (s3://bucket/key, or a prefix ending /, where
the file is named for the cluster and month). Exit 2 for bad input or policy, 4 when the month is
refused (unpriced hours, or hours not final under --require-complete)."""
CHARGEBACK_EXAMPLES = """\
examples:
  finops report chargeback --month 2026-10 --policy policy.yaml
      October per team, as a table: allocated, idle and shared lines adding up to the bill
  finops report chargeback --month 2026-10 --policy policy.yaml --by cost-center --format csv > 2026-10.csv
      per cost centre, as CSV
  finops report chargeback --month 2026-10 --policy policy.yaml --basis billed --require-complete
      reconciled to the imported cloud bill; refused unless every hour is final and priced"""
FOCUS_EXAMPLES = """\
examples:
  finops export focus --month 2026-10 --policy policy.yaml --to focus-2026-10.csv
      every cluster and the month's cloud spend, to a local file
  finops export focus --month 2026-10 --policy policy.yaml --format parquet --focus-version 1.2 --to out/
      Parquet with FOCUS 1.2's columns, as out/focus-all-2026-10.parquet
  finops export focus --month 2026-10 --policy policy.yaml --basis amortised --to out/
      split from the imported bill's lines (node-days, discounts, taxes), and the Contract
      Commitment dataset of the commitments they apply, as out/focus-all-2026-10.csv and
      out/focus-all-2026-10.contract-commitment.csv
  finops export focus --month 2026-10 --policy policy.yaml --cluster prod --to s3://billing/focus/ \\
      --s3-endpoint http://minio.storage:9000 --require-complete
      one cluster, to an S3-compatible store as s3://billing/focus/focus-prod-2026-10.csv;
      refused unless every hour is final and priced"""
