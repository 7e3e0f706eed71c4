"""Every function target, so one image serves any of them: functions-framework picks the one
named by ``FUNCTION_TARGET`` (``--source functions/main.py --target collect_allocations``).

At cold start the chosen target's settings are validated, so a missing or malformed variable
stops the revision from becoming ready, with a message naming the variable, instead of failing
requests one by one.
"""

from __future__ import annotations

import os
import sys

from functions.backfill.main import backfill
from functions.collect_allocations.main import collect_allocations
from functions.collect_charges.main import collect_charges
from functions.cost_api.main import cost_api
from functions.on_sync.main import on_sync
from functions.warmup import warm_up

__all__ = ["backfill", "collect_allocations", "collect_charges", "cost_api", "on_sync"]

if __name__ != "__main__" and os.environ.get("FUNCTION_TARGET"):
    warm_up(os.environ["FUNCTION_TARGET"], sys.modules[__name__])
