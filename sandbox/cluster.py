"""The Kubernetes objects of a scenario: the cluster the OpenCost sandbox reports on, as the API sees it.

Both sandboxes describe one cluster: :func:`cluster_objects` derives the objects from the compiled
scenario the OpenCost sandbox evaluates, every name from :mod:`sandbox.opencost.naming`, so each pod
OpenCost reports walks up its ``ownerReferences`` to its workload::

    objects = cluster_objects(scenario, now=NOW)
    with sandbox.opencost.serve(scenario, clock=lambda: NOW), sandbox.kube.serve(objects=objects):
        ...   # or: with sandbox.cluster_sandbox.serve_cluster(scenario, now=NOW, seed_dir=...) as both:

What exists is the cluster *at* ``now`` (relative scenario times resolve exactly as in the OpenCost
sandbox: from ``now`` truncated to the hour):

* Namespaces (scenario labels, keys unsanitised, plus ``kubernetes.io/metadata.name``) and Nodes;
* each workload created by ``now`` and not yet ended, with its pods ``Running``; a workload that
  ended before ``now`` is gone (its pods too), except a ``Job``, which stays complete with its pods
  ``Succeeded``, as Jobs do without a TTL;
* a CronJob's Jobs for the runs that started before ``now`` and were still running within
  ``job_history`` (default 24 h, so every run the OpenCost sandbox bills in a ``24h`` window is
  there), finished ones ``Succeeded`` with ``completionTime``/``finishedAt`` at the run's end.

Every object has a deterministic ``metadata.uid`` (uuid5 of cluster/kind/namespace/name) and
``creationTimestamp``; children carry ``ownerReferences`` with ``controller`` and
``blockOwnerDeletion``. Pod labels are ``app: <workload>`` plus the workload's labels, exactly the
pod labels OpenCost reports (before sanitising); controller-added labels such as
``pod-template-hash`` are only on ReplicaSets. Pods have ``spec.nodeName`` (the node OpenCost
reports), container resource requests, ``status.startTime`` and container states.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from sandbox.kube_fields import (
    Obj,
    container_resources,
    cpu_quantity,
    cron_expression,
    memory_quantity,
    object_uid,
    owner_reference,
)
from sandbox.opencost.model import Cluster, CronRun, PodSpec, WorkloadSpec
from sandbox.opencost.naming import REPLICASET_OWNERS, replicaset_name, template_hash
from sandbox.opencost.scenario import API_VERSIONS, Scenario
from sandbox.opencost.windows import DAY, HOUR, floor, rfc3339


class _Builder:
    """Builds the objects of one compiled scenario at one instant."""

    def __init__(self, scenario: Scenario, now: int, job_history: int) -> None:
        self.cluster = Cluster(scenario)
        self.now = now
        self.anchor = floor(now, HOUR)
        self.job_history = job_history
        retention = scenario.retention
        # "has always existed": since the data begins, or 30 days before the anchor without retention
        self.epoch = floor(now, 60) - retention if retention else self.anchor - 30 * DAY
        self.out: list[Obj] = []

    def build(self) -> list[Obj]:
        for ns in self.cluster.scenario.namespaces:
            labels = {**ns.labels, "kubernetes.io/metadata.name": ns.name}
            self.add(
                "v1",
                "Namespace",
                ns.name,
                None,
                labels,
                self.epoch,
                spec={"finalizers": ["kubernetes"]},
                status={"phase": "Active"},
            )
        for node in self.cluster.scenario.nodes:
            self._node(node.name, node.cpu_cores, node.ram_gib, node.gpus, node.provider_id)
        for spec in self.cluster.workloads:
            self._workload(spec)
        return self.out

    # -- objects -----------------------------------------------------------------------------------

    def add(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None,
        labels: dict[str, str],
        created: int,
        *,
        owner: Obj | None = None,
        spec: Obj | None = None,
        status: Obj | None = None,
        annotations: dict[str, str] | None = None,
    ) -> Obj:
        meta: Obj = {
            "name": name,
            "uid": object_uid(self.cluster.name, kind, namespace, name),
            "creationTimestamp": rfc3339(created),
            "labels": dict(labels),
        }
        if namespace is not None:
            meta["namespace"] = namespace
        if annotations:
            meta["annotations"] = dict(annotations)
        if owner is not None:
            meta["ownerReferences"] = [owner_reference(owner)]
        obj: Obj = {"apiVersion": api_version, "kind": kind, "metadata": meta}
        if spec is not None:
            obj["spec"] = spec
        if status is not None:
            obj["status"] = status
        self.out.append(obj)
        return obj

    def _node(self, name: str, cores: float, ram_gib: float, gpus: float, provider_id: str | None) -> None:
        capacity = {"cpu": cpu_quantity(cores), "memory": memory_quantity(ram_gib), "pods": "110"}
        if gpus:
            capacity["nvidia.com/gpu"] = cpu_quantity(gpus)
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
        status = {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        }
        self.add("v1", "Node", name, None, labels, self.epoch, spec={"providerID": provider_id or name}, status=status)

    # -- workloads ---------------------------------------------------------------------------------

    def _workload(self, spec: WorkloadSpec) -> None:
        w = spec.source
        created = spec.start.resolve(self.anchor) if spec.start is not None else self.epoch
        ended = spec.end.resolve(self.anchor) if spec.end is not None else None
        if created > self.now or (ended is not None and ended <= self.now and w.kind != "Job"):
            return  # not created yet, or deleted (with its pods) before now
        labels = {"app": w.name, **w.labels}
        selector = {"matchLabels": {"app": w.name}}
        template = self._template(spec, labels, "Never" if w.kind in ("Job", "CronJob") else "Always")
        n = len(spec.pods)
        running = {"replicas": n, "readyReplicas": n, "availableReplicas": n, "observedGeneration": 1}
        top_spec: Obj = {"replicas": w.replicas, "selector": selector, "template": template}
        api = API_VERSIONS[w.kind]
        if w.kind == "Pod":
            for pod in spec.pods:
                self._pod(spec, pod, None, created, None)
        elif w.kind in REPLICASET_OWNERS:
            self._replicaset_owner(spec, labels, top_spec, running, created)
        elif w.kind in ("StatefulSet", "ReplicaSet", "DaemonSet"):
            if w.kind == "StatefulSet":
                top_spec["serviceName"] = w.name
                status = {**running, "currentReplicas": n, "updatedReplicas": n}
            elif w.kind == "DaemonSet":
                top_spec.pop("replicas")
                status = {
                    "desiredNumberScheduled": n,
                    "currentNumberScheduled": n,
                    "numberReady": n,
                    "numberMisscheduled": 0,
                    "numberAvailable": n,
                    "updatedNumberScheduled": n,
                    "observedGeneration": 1,
                }
            else:
                status = {**running, "fullyLabeledReplicas": n}
            owner = self.add(api, w.kind, w.name, w.namespace, labels, created, spec=top_spec, status=status)
            for pod in spec.pods:
                self._pod(spec, pod, owner, created, None)
        elif w.kind == "Job":
            done = ended if ended is not None and ended <= self.now else None
            job = self._job(spec, w.name, labels, template, created, done, owner=None)
            for pod in spec.pods:
                self._pod(spec, pod, job, created, done)
        else:
            self._cronjob(spec, labels, template, created, ended)

    def _replicaset_owner(
        self, spec: WorkloadSpec, labels: dict[str, str], top_spec: Obj, running: Obj, created: int
    ) -> None:
        """A Deployment or Argo Rollout, its one ReplicaSet (``<name>-<hash>``) and the pods of that."""
        w, n, pod_hash = spec.source, len(spec.pods), template_hash(spec.source)
        api = API_VERSIONS[w.kind]
        status: Obj = {**running, "updatedReplicas": n}
        annotations = None
        if w.kind == "Deployment":
            strategy: Obj = {"type": "RollingUpdate"}
            annotations = {"deployment.kubernetes.io/revision": "1"}
            hash_label = "pod-template-hash"
        else:
            strategy = {"canary": {"steps": [{"setWeight": 20}, {"pause": {"duration": "10m"}}]}}
            status |= {"phase": "Healthy", "currentPodHash": pod_hash, "stableRS": pod_hash}
            hash_label = "rollouts-pod-template-hash"
        owner = self.add(
            api,
            w.kind,
            w.name,
            w.namespace,
            labels,
            created,
            spec={**top_spec, "strategy": strategy},
            status=status,
            annotations=annotations,
        )
        rs = self.add(
            "apps/v1",
            "ReplicaSet",
            replicaset_name(w),
            w.namespace,
            {**labels, hash_label: pod_hash},
            created,
            owner=owner,
            spec=top_spec,
            status={**running, "fullyLabeledReplicas": n},
        )
        for pod in spec.pods:
            self._pod(spec, pod, rs, created, None)

    def _template(self, spec: WorkloadSpec, labels: dict[str, str], restart: str) -> Obj:
        w = spec.source
        containers = [
            {
                "name": c.name,
                "image": f"registry.example/{w.namespace}/{w.name}:1.0",
                "resources": container_resources(c),
            }
            for c in w.containers
        ]
        return {"metadata": {"labels": dict(labels)}, "spec": {"containers": containers, "restartPolicy": restart}}

    def _job(
        self,
        spec: WorkloadSpec,
        name: str,
        labels: dict[str, str],
        template: Obj,
        started: int,
        done: int | None,
        *,
        owner: Obj | None,
    ) -> Obj:
        n = len(spec.pods) if spec.source.kind == "Job" else spec.pods_per_instance
        status: Obj = {"startTime": rfc3339(started)}
        if done is None:
            status["active"] = n
        else:
            status.update(succeeded=n, completionTime=rfc3339(done))
            status["conditions"] = [{"type": "Complete", "status": "True", "lastTransitionTime": rfc3339(done)}]
        job_spec = {"parallelism": n, "completions": n, "backoffLimit": 6, "template": template}
        return self.add(
            "batch/v1", "Job", name, spec.source.namespace, labels, started, owner=owner, spec=job_spec, status=status
        )

    def _cronjob(
        self, spec: WorkloadSpec, labels: dict[str, str], template: Obj, created: int, ended: int | None
    ) -> None:
        w = spec.source
        every, offset = (w.schedule.every, w.schedule.offset) if w.schedule else (3600, 0)
        lo = max(created, self.now - self.job_history)
        hi = self.now if ended is None else min(ended, self.now)
        runs: list[CronRun] = list(self.cluster.cron_runs(spec, lo, hi)) if lo < hi else []
        cron_spec = {
            "schedule": cron_expression(every, offset),
            "concurrencyPolicy": "Allow",
            "jobTemplate": {
                "spec": {
                    "parallelism": spec.pods_per_instance,
                    "completions": spec.pods_per_instance,
                    "template": template,
                }
            },
        }
        status: Obj = {}
        cronjob = self.add("batch/v1", "CronJob", w.name, w.namespace, labels, created, spec=cron_spec, status=status)
        active = []
        for run in runs:
            done = run.end if run.end <= self.now else None
            job = self._job(spec, run.job, labels, template, run.start, done, owner=cronjob)
            for pod in run.pods:
                self._pod(spec, pod, job, run.start, done)
            if done is None:
                active.append(
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "namespace": w.namespace,
                        "name": run.job,
                        "uid": job["metadata"]["uid"],
                    }
                )
            else:
                status["lastSuccessfulTime"] = rfc3339(done)
        if runs:
            status["lastScheduleTime"] = rfc3339(runs[-1].start)
        if active:
            status["active"] = active

    def _pod(self, spec: WorkloadSpec, pod: PodSpec, owner: Obj | None, started: int, done: int | None) -> None:
        w = spec.source
        labels = {"app": w.name, **w.labels}
        restart = "Never" if w.kind in ("Job", "CronJob") else "Always"
        body = self._template(spec, labels, restart)["spec"]
        body["nodeName"] = pod.node.name
        start_text = rfc3339(started)
        states = []
        for c in w.containers:
            state: Obj
            if done is None:
                state = {"running": {"startedAt": start_text}}
            else:
                state = {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": start_text,
                        "finishedAt": rfc3339(done),
                    }
                }
            image = f"registry.example/{w.namespace}/{w.name}:1.0"
            image_id = f"{image.rsplit(':', 1)[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"
            states.append(
                {
                    "name": c.name,
                    "image": image,
                    "imageID": image_id,
                    "ready": done is None,
                    "restartCount": 0,
                    "state": state,
                }
            )
        status = {
            "phase": "Running" if done is None else "Succeeded",
            "startTime": start_text,
            "conditions": [{"type": "Ready", "status": "True" if done is None else "False"}],
            "containerStatuses": states,
        }
        self.add("v1", "Pod", pod.name, w.namespace, labels, started, owner=owner, spec=body, status=status)


def aware(moment: datetime) -> datetime:
    """``moment``, naive taken as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def cluster_objects(
    scenario: Scenario, *, now: datetime | None = None, job_history: timedelta = timedelta(hours=24)
) -> list[Obj]:
    """The Kubernetes objects of ``scenario`` at ``now`` (default: the current time; naive means UTC).

    Pod names are identical to the ``properties.pod`` values the OpenCost sandbox reports for the
    same scenario and clock. Apply them with ``sandbox.kube.serve(objects=...)``.
    """
    moment = aware(now or datetime.now(UTC))
    return _Builder(scenario, int(moment.timestamp()), int(job_history.total_seconds())).build()
