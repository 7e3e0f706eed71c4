"""We test these aspects of the application-scope rule, which exists twice (Python builds the
selector at measurement, SQL applies it to the hourly rows, migration 013):

- a row belongs to an application scope exactly when its controller key (``controller_key``) is
  one of the selector's controllers or its pod one of the selector's pods, and only a workload row;
- a namespace scope takes every row of the namespace.
"""

from __future__ import annotations

import pytest

from finops.measurement import controller_key
from infra.postgres import Database

ROWS = [
    ("workload", "deployment", "web", "web-7f9c-1"),
    ("workload", "deployment", "web-api", "web-api-1"),
    ("workload", "rollout", "shop-6d9f8c7b5", "shop-6d9f8c7b5-x2k4p"),
    ("workload", "rollout", "shop-canary-5c4b", "shop-canary-5c4b-q"),
    ("workload", None, None, "lonely"),
    ("workload", "job", "nightly", "nightly-29384-abcde"),
    ("unmounted", None, None, None),
]
SELECTORS = [
    (["deployment:web"], []),
    (["rollout:shop"], ["lonely"]),
    (["job:nightly", "rollout:shop-canary"], []),
    ([], []),
]


@pytest.mark.parametrize(("controllers", "pods"), SELECTORS, ids=["deployment", "rollout+bare", "job+canary", "empty"])
def test_sql_selects_the_rows_the_python_selector_names(db: Database, controllers: list[str], pods: list[str]) -> None:
    with db.connection() as conn:
        for kind, controller_kind, controller, pod in ROWS:
            row = conn.execute(
                "SELECT finops_in_app_scope('application', %s, %s, %s, %s, %s, %s) AS own,"
                " finops_in_app_scope('namespace', %s, %s, %s, %s, %s, %s) AS whole",
                (controllers, pods, kind, controller_kind, controller, pod) * 2,
            ).fetchone()
            assert row is not None
            expected = kind == "workload" and (
                controller_key(controller_kind, controller) in controllers or (pod is not None and pod in pods)
            )
            assert (row["own"], row["whole"]) == (expected, True), (controllers, pods, controller_kind, controller, pod)
