"""The README's screenshots (docs/images/*.png) and what they were made from.

``make screenshots`` runs the browser test that shoots them (tests/e2e/test_ui_extension.py, over
the demo of ``finops run``), copies them here and runs this module, which writes
docs/images/screenshots.json: the sha256 of every input that changes what they show (the built UI
extension, the Argo CD host page, the demo's data) and of the PNGs themselves.
tests/unit/test_screenshots.py fails when those no longer match, so a change to the UI or the demo
comes with fresh screenshots.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
RECORD = IMAGES / "screenshots.json"
SHOTS = ("cost-tab.png", "cluster-view.png")
# What the pages show is drawn by the extension's bundle inside the host page, from the demo's
# cluster (scenario, Kubernetes objects, policy, CI estimate). Python code between them changes the
# figures only through these files or through a contract the browser tests check.
INPUTS = (
    "ui/dist/extension-finops.js",
    "sandbox/argocd_host/static/*",
    "sandbox/demo/*",
    "sandbox/demo/kube/*",
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def inputs() -> dict[str, str]:
    """Every input file, by its path from the repository's root, with its sha256."""
    found = sorted({p for pattern in INPUTS for p in ROOT.glob(pattern) if p.is_file()})
    return {p.relative_to(ROOT).as_posix(): _sha256(p) for p in found}


def current() -> dict[str, dict[str, str]]:
    """What screenshots.json should hold for the files as they are now."""
    return {
        "inputs": inputs(),
        "screenshots": {f"docs/images/{name}": _sha256(IMAGES / name) for name in SHOTS if (IMAGES / name).is_file()},
    }


def recorded() -> dict[str, dict[str, str]]:
    record: dict[str, dict[str, str]] = json.loads(RECORD.read_text())
    return record


def main() -> int:
    missing = [name for name in SHOTS if not (IMAGES / name).is_file()]
    if missing:
        print(f"{', '.join(missing)} missing under {IMAGES}: run make screenshots", file=sys.stderr)
        return 1
    RECORD.write_text(json.dumps(current(), indent=2, sort_keys=True) + "\n")
    print(f"wrote {RECORD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
