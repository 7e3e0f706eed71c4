"""How a function is served: the targets one image serves (``FUNCTION_TARGET``, in the order the CLI
lists them) and the functions-framework command the image runs for one of them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TARGETS = ("collect_allocations", "on_sync", "backfill", "cost_api", "collect_charges", "reconcile")


def functions_framework_command(target: str, port: int, source: Path | None = None) -> list[str]:
    """functions-framework serving ``target`` on ``port`` from ``source`` (``functions/main.py`` of
    the installed package unless given: a benchmark serves another checkout's)."""
    if source is None:
        spec = importlib.util.find_spec("functions.main")
        assert spec is not None and spec.origin is not None  # part of this package
        source = Path(spec.origin)
    binary = Path(sys.executable).with_name("functions-framework")
    return [str(binary), "--target", target, "--source", str(source), "--port", str(port)]
