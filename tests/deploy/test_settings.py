"""We test these aspects of what the manifests give each function (the Knative Services, the
CronJobs that ping them, the install Job, the Secret):

- every target has exactly one Service, and each Service's environment (its ``env``, the
  ConfigMaps and Secret keys it imports) agrees with the target's settings class: every required
  field is provided, every variable is a field of the class or a variable functions-framework or
  Knative reads, secrets come from the Secret only, and the whole environment validates;
- the timeouts line up: ``CLOUD_RUN_TIMEOUT_SECONDS`` equals ``timeoutSeconds``, the callers wait
  longer than the Service may take, the backfill's budget fits in its Service's timeout;
- concurrency: collectors run one at a time, every Service keeps a thread free beyond its
  ``containerConcurrency`` (for Knative's probes), all scale to zero and stay cluster-local;
- the CronJobs and the install Job run ``finops ping``/``finops install`` with variables those
  commands read, and send the token of the same Secret key the pinged function checks;
- the Secret's keys are exactly the ones referenced.
"""

from __future__ import annotations

import re

import pytest
from pydantic import SecretStr

from cli.ops import INSTALL_ENV, PING_ENV
from infra.serving import TARGETS
from infra.settings import (
    BackfillSettings,
    CollectAllocationsSettings,
    CollectChargesSettings,
    CommonSettings,
    CostApiSettings,
    OnSyncSettings,
    ReconcileSettings,
    load,
)
from infra.settings.base import Settings
from tests.deploy import manifests
from tests.deploy.manifests import Obj

SETTINGS: dict[str, type[Settings]] = {
    "collect_allocations": CollectAllocationsSettings,
    "on_sync": OnSyncSettings,
    "backfill": BackfillSettings,
    "cost_api": CostApiSettings,
    "collect_charges": CollectChargesSettings,
    "reconcile": ReconcileSettings,
}
# Read by functions-framework (FUNCTION_TARGET, THREADS, WORKERS, CLOUD_RUN_TIMEOUT_SECONDS) or set by
# Knative (PORT, K_SINK through a SinkBinding), not by our settings classes.
FRAMEWORK = {"FUNCTION_TARGET", "THREADS", "WORKERS", "CLOUD_RUN_TIMEOUT_SECONDS", "PORT", "K_SINK"}
PINGED = {"collect_allocations", "collect_charges"}
DUMMY_SECRETS = {
    "DATABASE_URL": "postgresql://finops:secret@postgres.example:5432/finops",
    "PING_TOKEN": "ping",
    "WEBHOOK_TOKEN": "hook",
    "PROXY_TOKEN": "proxy",
    "METRICS_TOKEN": "metrics",
    "CI_TOKEN": "ci",
}


def test_every_target_has_a_settings_class_and_one_service() -> None:
    assert set(SETTINGS) == set(TARGETS)
    assert set(manifests.services_by_target()) == set(TARGETS)


SECRET_TYPES = (SecretStr, SecretStr | None)


def _secret_fields(cls: type[Settings]) -> set[str]:
    return {name for name, field in cls.model_fields.items() if field.annotation in SECRET_TYPES}


@pytest.mark.parametrize("target", TARGETS)
def test_service_environment_matches_the_settings_class(target: str) -> None:
    cls = SETTINGS[target]
    env = manifests.container_env(manifests.service_container(manifests.services_by_target()[target]))
    fields = set(cls.model_fields)
    required = {name for name, field in cls.model_fields.items() if field.is_required()}
    assert required <= set(env), f"{target}: required settings not provided: {sorted(required - set(env))}"
    assert set(env) - FRAMEWORK <= fields, (
        f"{target}: not settings of {cls.__name__}: {sorted(set(env) - FRAMEWORK - fields)}"
    )
    for name in _secret_fields(cls) & set(env):
        assert env[name].kind == "secret", f"{target}: {name} is a secret but comes from {env[name].kind}"
    for name, source in env.items():
        assert source.kind != "secret" or name in _secret_fields(cls), f"{target}: {name} is not a secret setting"
    settings = load(
        cls, manifests.resolved_env(manifests.service_container(manifests.services_by_target()[target]), DUMMY_SECRETS)
    )
    assert isinstance(settings, CommonSettings | OnSyncSettings)


def _template(service: Obj) -> Obj:
    return dict(service["spec"]["template"])


@pytest.mark.parametrize("target", TARGETS)
def test_service_timeouts_concurrency_and_scale(target: str) -> None:
    service = manifests.services_by_target()[target]
    template = _template(service)
    spec, annotations = template["spec"], template["metadata"]["annotations"]
    env = manifests.resolved_env(manifests.service_container(service), DUMMY_SECRETS)
    assert int(env["CLOUD_RUN_TIMEOUT_SECONDS"]) == spec["timeoutSeconds"] <= 600
    assert int(env["THREADS"]) > spec["containerConcurrency"] >= 1, "keep a thread free for readiness probes"
    assert annotations["autoscaling.knative.dev/min-scale"] == "0"
    assert int(annotations["autoscaling.knative.dev/max-scale"]) >= 1
    assert service["metadata"]["labels"]["networking.knative.dev/visibility"] == "cluster-local"
    if target in PINGED or target == "backfill":
        assert (spec["containerConcurrency"], annotations["autoscaling.knative.dev/max-scale"]) == (1, "1")
    settings = load(SETTINGS[target], env)
    if isinstance(settings, BackfillSettings):
        assert spec["timeoutSeconds"] >= settings.BACKFILL_BUDGET_SECONDS + 30
    if isinstance(settings, OnSyncSettings):
        assert spec["containerConcurrency"] > settings.MAX_IN_FLIGHT, "room for webhooks beside measurements"


@pytest.mark.parametrize("target", TARGETS)
def test_each_service_runs_as_its_own_service_account(target: str) -> None:
    service = manifests.services_by_target()[target]
    account = _template(service)["spec"]["serviceAccountName"]
    assert account == service["metadata"]["name"]
    assert manifests.named("ServiceAccount", account)["metadata"]["namespace"] == service["metadata"]["namespace"]


def _script_container(obj: Obj) -> Obj:
    spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    return dict(container)


def _pod_spec(obj: Obj) -> Obj:
    spec = obj["spec"]["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else obj["spec"]
    return dict(spec["template"]["spec"])


JOBS = [*manifests.of_kind("CronJob"), *manifests.of_kind("Job")]


@pytest.mark.parametrize("job", JOBS, ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_job_scripts_use_only_their_own_variables_and_the_pinged_function_token(job: Obj) -> None:
    container = _script_container(job)
    env = manifests.container_env(container)
    command, known = (
        (["finops", "ping"], PING_ENV) if job["kind"] == "CronJob" else (["finops", "install"], INSTALL_ENV)
    )
    assert container["command"] == command and "args" not in container
    assert set(env) <= known, f"not read by {' '.join(command)}: {sorted(set(env) - known)}"
    url = env["FUNCTION_URL" if job["kind"] == "CronJob" else "BACKFILL_URL"].value
    service = manifests.service_at(url)
    service_env = manifests.container_env(manifests.service_container(service))
    assert env["PING_TOKEN"] == service_env["PING_TOKEN"], "the caller must send the token the function checks"
    assert "PING_TOKEN" in SETTINGS[manifests.service_target(service)].model_fields
    wait = int(env["MAX_TIME" if job["kind"] == "CronJob" else "REQUEST_TIMEOUT_SECONDS"].value)
    assert wait >= _template(service)["spec"]["timeoutSeconds"] + 30, "the caller must outwait the Service"
    assert _pod_spec(job)["restartPolicy"] == "Never"


@pytest.mark.parametrize("cronjob", manifests.of_kind("CronJob"), ids=lambda o: o["metadata"]["name"])
def test_cronjobs_run_once_per_hour_and_fail_visibly(cronjob: Obj) -> None:
    spec = cronjob["spec"]
    env = manifests.container_env(_script_container(cronjob))
    assert env["CRONJOB"].value == cronjob["metadata"]["name"]
    assert env["JOB_NAME"].ref == "metadata.labels['batch.kubernetes.io/job-name']"
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["timeZone"] == "Etc/UTC"
    assert re.fullmatch(r"\d{1,2} \* \* \* \*", spec["schedule"]), "hourly"
    assert 0 < spec["startingDeadlineSeconds"] < 3600
    assert spec["successfulJobsHistoryLimit"] >= 1 and spec["failedJobsHistoryLimit"] >= 1
    job = spec["jobTemplate"]["spec"]
    assert job["backoffLimit"] >= 1
    assert job["activeDeadlineSeconds"] < 3600, "a stuck run must end before the next hour's"
    assert manifests.service_target(manifests.service_at(env["FUNCTION_URL"].value)) in PINGED
    # `finops ping` pings again while work remains: every ping fits in the Job's deadline.
    assert int(env["MAX_PINGS"].value) * int(env["MAX_TIME"].value) <= job["activeDeadlineSeconds"]


def test_both_cronjobs_run_the_same_command() -> None:
    commands = {(*_script_container(c)["command"], _script_container(c)["image"]) for c in manifests.of_kind("CronJob")}
    assert len(commands) == 1
    pinged = {
        manifests.service_target(
            manifests.service_at(manifests.container_env(_script_container(c))["FUNCTION_URL"].value)
        )
        for c in manifests.of_kind("CronJob")
    }
    assert pinged == PINGED


def test_install_job_is_an_argo_cd_post_sync_hook_and_a_plain_job() -> None:
    job = manifests.named("Job", "finops-install")
    annotations = job["metadata"]["annotations"]
    assert annotations["argocd.argoproj.io/hook"] == "PostSync"
    assert annotations["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
    assert job["spec"]["activeDeadlineSeconds"] > 0 and job["spec"]["backoffLimit"] >= 1
    assert _script_container(job)["command"] == ["finops", "install"]  # migrates, then backfills
    env = manifests.container_env(_script_container(job))
    assert (
        env["DATABASE_URL"]
        == manifests.container_env(manifests.service_container(manifests.named("Service", "backfill")))["DATABASE_URL"]
    )


def test_the_secret_has_exactly_the_keys_referenced() -> None:
    secret = manifests.example_secret()
    referenced: set[str] = set()
    for obj in manifests.everything():
        for container in _all_containers(obj):
            for source in manifests.container_env(container).values():
                if source.kind == "secret":
                    assert source.ref == secret["metadata"]["name"]
                    referenced.add(source.key)
    assert referenced == set(secret["stringData"]) == set(DUMMY_SECRETS)


def _all_containers(obj: Obj) -> list[Obj]:
    if obj["kind"] == "Service" and manifests.is_knative(obj):
        return [manifests.service_container(obj)]
    if obj["kind"] in ("CronJob", "Job"):
        return [_script_container(obj)]
    return []
