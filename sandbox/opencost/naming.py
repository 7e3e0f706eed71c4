"""How the simulated cluster names its pods, ReplicaSets and Jobs, and what OpenCost calls their owner.

The OpenCost sandbox (``properties.pod``) and the Kubernetes sandbox (``sandbox.cluster``) take every
name from here, so a client joining them by pod name finds one cluster. Kubernetes' shapes, made
deterministic:

* Deployment / Argo Rollout ``web`` in ``shop``: ReplicaSet ``web-<hash>`` (``hash`` = 5 hex digits of
  sha256("shop/web"), its ``pod-template-hash``), pods ``web-<hash>-0``, ``web-<hash>-1``, ...;
* StatefulSet, ReplicaSet, Job, and a bare Pod with ``replicas > 1``: ``<name>-0``, ``<name>-1``, ...;
  a bare Pod with one replica is called ``<name>``; a DaemonSet pod ``<name>-<node>``;
* a CronJob run scheduled at epoch second ``t``: Job ``<cronjob>-<t // 60>`` (minutes since the epoch,
  as the CronJob controller names Jobs), its pods ``<job>-<5 hex digits>``.

What OpenCost reports as a pod's controller (``kube_pod_owner`` resolved as OpenCost's
``resToPodReplicaSetMap`` and job helpers do): the Deployment for a Deployment's pods, the CronJob
(``controllerKind: job``, the Job's timestamp suffix stripped) for a CronJob's pods, and for an Argo
Rollout's pods ``controllerKind: rollout`` with the *ReplicaSet* as controller (``web-<hash>``),
because OpenCost (since it queries ``kube_replicaset_owner{owner_kind="Rollout"}``) keys the pod on
its ReplicaSet. A bare Pod has no controller.
"""

from __future__ import annotations

import hashlib

from sandbox.opencost.scenario import Workload

CONTROLLER_KIND = {
    "Deployment": "deployment",
    "Rollout": "rollout",
    "StatefulSet": "statefulset",
    "DaemonSet": "daemonset",
    "ReplicaSet": "replicaset",
    "Job": "job",
    "CronJob": "job",
    "Pod": "",
}
REPLICASET_OWNERS = ("Deployment", "Rollout")  # kinds whose pods belong to a ReplicaSet they own


def short_hash(text: str, length: int = 5) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def template_hash(w: Workload) -> str:
    """The ``pod-template-hash`` of a Deployment's or Rollout's (only) ReplicaSet."""
    return short_hash(w.namespace + "/" + w.name)


def replicaset_name(w: Workload) -> str:
    """The ReplicaSet a Deployment or Rollout owns: ``<name>-<template hash>``."""
    return f"{w.name}-{template_hash(w)}"


def pod_name(w: Workload, index: int) -> str:
    """Pod ``index`` of a workload that is neither a DaemonSet nor a CronJob."""
    if w.kind in REPLICASET_OWNERS:
        return f"{replicaset_name(w)}-{index}"
    if w.kind == "Pod" and w.replicas == 1:
        return w.name
    return f"{w.name}-{index}"


def daemon_pod_name(w: Workload, node: str) -> str:
    return f"{w.name}-{node}"


def job_name(cronjob: str, scheduled: int) -> str:
    """The Job a CronJob creates for the run scheduled at epoch second ``scheduled``."""
    return f"{cronjob}-{scheduled // 60}"


def job_pod_name(job: str, index: int) -> str:
    return f"{job}-{short_hash(job + str(index))}"


def controller_of(w: Workload) -> tuple[str, str]:
    """``(controllerKind, controller)`` as OpenCost reports them for the workload's pods."""
    if w.kind == "Pod":
        return "", ""
    if w.kind == "Rollout":
        return CONTROLLER_KIND[w.kind], replicaset_name(w)
    return CONTROLLER_KIND[w.kind], w.name
