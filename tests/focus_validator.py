"""The FinOps Foundation's FOCUS validator (PyPI ``focus-validator``, pinned in
``tests/focus-validator.txt``, installed by ``make test`` into ``.venv/focus-validator``) run on an
exported file, CSV or Parquet; its JUnit report read back as the names of the failed rules.

The validator ships rule sets for FOCUS 0.5, 1.0-preview and 1.0 only (later ones it downloads at
run time, which cannot be done here), so exports are checked against 1.0's; the columns 1.2 and
1.3 added are checked by ``tests/focus_conformance.py``, written from their definitions.

``OVERRIDES`` are the rules skipped, each for a reason the FOCUS specification gives:

- 1.0.0's rule set names four columns by their pre-1.0 names (``Provider``, ``Publisher``,
  ``InvoiceIssuer``, ``ResourceID``; FOCUS 1.0 calls them ``ProviderName``, ``PublisherName``,
  ``InvoiceIssuerName`` and ``ResourceId``), and a file may not carry a column FOCUS does not
  define without the ``x_`` prefix, so those four ``_Required`` rules cannot pass on a conforming
  file; the rules checking the columns' values under the old names pass vacuously and stay on;
- ``SkuPriceId_Nullable`` wants a SkuPriceId on usage, reading a column by its pre-1.0 name
  (``ChargeType``); SkuPriceId is Conditional on publishing a price list, a feature we do not
  claim (``docs/how-to/focus-export.md`` lists the features claimed);

One more exception, which an override cannot express: on Parquet, the ``_IsDecimal`` rules fail
(``decimal_rules()``). The validator checks a Decimal column's type as pandas ``float64``, binary
floating point, and a Parquet ``decimal128`` column (FOCUS's Decimal, stored exactly) reads as
Python ``Decimal`` objects; it enforces that type check even when the rule is overridden. The
tests expect exactly those failures on Parquet, check the columns' Parquet types themselves, and
the same values as CSV pass these rules.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# FOCUS_VALIDATOR_VENV: the checkout's own when the tests run in a copy of it (`make mutate`'s mutants/)
VENV = Path(os.environ.get("FOCUS_VALIDATOR_VENV") or ROOT / ".venv" / "focus-validator")
RULES = "1.0"
OVERRIDES = (
    "Provider_Required",
    "Publisher_Required",
    "InvoiceIssuer_Required",
    "ResourceID_Required",
    "SkuPriceId_Nullable",
)


def _site_packages() -> Path:
    found = sorted(VENV.glob("lib/python*/site-packages/focus_validator"))
    if not found:
        raise AssertionError(f"the FOCUS validator is not installed in {VENV}: run `make focus-validator`")
    return found[0].parent


def decimal_rules() -> list[str]:
    """The rule set's Decimal type checks, which a Parquet ``decimal128`` column fails."""
    rules = _site_packages() / "focus_validator" / "rules" / "version_sets" / RULES
    return sorted(path.stem for path in rules.glob("*_IsDecimal.yaml"))


def failed_rules(data: Path, tmp: Path) -> list[str]:
    """The names of the rules ``data`` (CSV, or Parquet by its ``.parquet`` name) fails (``[]``:
    it passes every rule not overridden)."""
    overrides = tmp / "overrides.yaml"
    overrides.write_text("overrides:\n" + "".join(f"  - {rule}\n" for rule in OVERRIDES))
    report = tmp / "validator.xml"
    command = [
        str(VENV / "bin" / "python"),
        "-m",
        "focus_validator.main",
        "--data-file",
        str(data.resolve()),
        "--validate-version",
        RULES,
        "--override-file",
        str(overrides),
        "--output-type",
        "unittest",
        "--output-destination",
        str(report),
    ]
    # The validator reads its currency table by a path relative to its package's parent.
    done = subprocess.run(command, cwd=_site_packages(), capture_output=True, text=True, check=False, timeout=120)
    if not report.exists():
        print(done.stdout, done.stderr, file=sys.stderr)
        raise AssertionError(f"the FOCUS validator wrote no report (exit {done.returncode})")
    suites = ET.parse(report).getroot()  # noqa: S314 - the validator's own report, written just now
    total = int(suites.get("tests") or 0)
    assert total > 100, f"the validator ran {total} rules: not the {RULES} rule set"
    return sorted(
        case.get("name", "").split(" :: ")[0] for case in suites.iter("testcase") if case.find("failure") is not None
    )
