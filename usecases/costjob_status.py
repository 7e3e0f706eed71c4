"""CostJob status: the execution record of runs pinged on a CostJob's behalf.

Compatible with the operator's status (``lastExecutionTime``, ``lastExecutionStatus``,
``lastSuccessfulExecutionTime``, ``executionHistory`` newest first, at most 10). The history is a
list, so the update is read-modify-write with the object's ``resourceVersion`` as precondition,
retried on conflict.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, field_validator

from finops.errors import Conflict, FinOpsError, InvalidInput
from finops.labels import validate_namespace
from usecases.runs import Run

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "finops.stakater.com", "v1alpha1", "costjobs"
HISTORY_LIMIT = 10


class CostJobRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str
    name: str

    @field_validator("namespace", "name")
    @classmethod
    def _name(cls, value: str) -> str:
        try:
            return validate_namespace(value, field="costJob")
        except InvalidInput as exc:
            raise ValueError(exc.message) from exc

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class KubeStatusWriter(Protocol):
    def get_object(self, group: str, version: str, plural: str, namespace: str | None, name: str) -> dict[str, Any]: ...

    def patch_status(
        self, group: str, version: str, plural: str, namespace: str | None, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]: ...


def require_costjob(kube: KubeStatusWriter, ref: CostJobRef) -> dict[str, Any]:
    """The named CostJob; ``NotFound`` (404) before any work when it does not exist."""
    return kube.get_object(GROUP, VERSION, PLURAL, ref.namespace, ref.name)


def record_execution(kube: KubeStatusWriter, ref: CostJobRef, run: Run) -> None:
    """Prepend this run to the CostJob's execution history. Never fails the run: a status that
    cannot be written is logged (the run's own record is already in ``job_runs``)."""
    status = "Failed" if run.outcome == "failed" else "Success"
    record = {
        "executionTime": run.started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "status": status,
        "duration": f"{run.duration_ms / 1000:.3f}s",
    }
    if run.error:
        # A crash's details stay in the function's log and job_runs, not in a readable status.
        record["error"] = f"internal error (run {run.run_id})" if run.http_status == 500 else run.error
    for _attempt in range(3):
        try:
            current = kube.get_object(GROUP, VERSION, PLURAL, ref.namespace, ref.name)
            history = list((current.get("status") or {}).get("executionHistory") or [])
            patch: dict[str, Any] = {
                "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                "status": {
                    "lastExecutionTime": record["executionTime"],
                    "lastExecutionStatus": status,
                    "executionHistory": [record, *history][:HISTORY_LIMIT],
                },
            }
            if status == "Success":
                patch["status"]["lastSuccessfulExecutionTime"] = record["executionTime"]
            kube.patch_status(GROUP, VERSION, PLURAL, ref.namespace, ref.name, patch)
            return
        except Conflict:
            continue
        except FinOpsError as exc:
            log.warning("CostJob status not updated", extra={"fields": {"costjob": str(ref), "error": exc.message}})
            return
    log.warning("CostJob status not updated: kept conflicting", extra={"fields": {"costjob": str(ref)}})
