"""Every function target, so one image serves any of them: functions-framework picks the one
named by ``FUNCTION_TARGET`` (``--source functions/main.py --target collect_allocations``).

Targets are imported on first access (PEP 562), so a Service pays the import time of its own
function only: scale-to-zero makes users wait for every cold start. At cold start the chosen
target's settings are validated, so a missing or malformed variable stops the revision from
becoming ready, with a message naming the variable, instead of failing requests one by one.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from functions.warmup import warm_up
from infra.serving import TARGETS
from infra.settings import ServingSettings, load

__all__ = list(TARGETS)


def __getattr__(name: str) -> Any:
    if name in TARGETS:
        return getattr(importlib.import_module(f"functions.{name}.main"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ != "__main__" and os.environ.get("FUNCTION_TARGET"):
    warm_up(os.environ["FUNCTION_TARGET"], sys.modules[__name__])
    load(ServingSettings)  # validated at cold start: the body limits (functions.edge) read it
