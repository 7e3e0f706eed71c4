"""The function targets one image serves (``FUNCTION_TARGET``), in the order the CLI lists them."""

TARGETS = ("collect_allocations", "on_sync", "backfill", "cost_api", "collect_charges", "reconcile")
