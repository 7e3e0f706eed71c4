"""The process's adapters, one of each per process: the database (psycopg's pool), the OpenCost,
Prometheus and Kubernetes clients. Built when first asked for, and forgotten in a forked worker
(gunicorn's master builds the app).
"""

from __future__ import annotations

import functools
import os
import threading
from typing import TYPE_CHECKING

from pydantic import SecretStr

from finops.errors import FinOpsError
from infra.postgres import Database, apply_migrations, connect
from infra.postgres.common import Timeouts
from infra.postgres.migrations import check_schema
from infra.settings import CommonSettings, KubeSettings, OpenCostSettings

if TYPE_CHECKING:  # each client is imported when first built: a function loads only the ones it uses
    from infra.kube import KubeClient
    from infra.opencost import OpenCostClient
    from infra.prometheus import PrometheusClient

_migrated: set[str] = set()  # DSNs checked (or migrated) by this process or the master it was forked from


@functools.cache
def database(
    dsn: str, pool: str, max_size: int, timeout: float, migrate: bool, timeouts: Timeouts | None = None
) -> Database:
    """One pool per process (per DSN), its schema checked (``check_schema``) on the DSN's first use
    in this process (or the master it was forked from); with ``migrate`` (``MIGRATE_ON_START``),
    pending migrations are applied first, under the migrations' lock. On any error the pool is
    closed and forgotten: the next request tries again rather than run on a wrong schema."""
    db = connect(dsn, pool=pool, max_size=max_size, timeout=timeout, timeouts=timeouts)
    if dsn not in _migrated:
        try:
            if migrate:
                apply_migrations(db)
            check_schema(db)
        except FinOpsError:
            database.cache_clear()
            db.close()
            raise
        _migrated.add(dsn)
    return db


@functools.cache
def _opencost(url: str, timeout: float, retries: int) -> OpenCostClient:
    from infra.opencost import OpenCostClient

    return OpenCostClient(url, timeout=timeout, retries=retries)


def opencost_from(settings: OpenCostSettings, timeout: float | None = None) -> OpenCostClient:
    """The process's OpenCost client (one per distinct timeout, e.g. a CostJob's)."""
    return _opencost(settings.OPENCOST_URL, timeout or settings.OPENCOST_TIMEOUT_SECONDS, settings.OPENCOST_RETRIES)


@functools.cache
def prometheus_from(url: str, timeout: float, token: SecretStr | None = None) -> PrometheusClient:
    """The process's Prometheus client (``ALLOCATION_SOURCE=prometheus``), one per URL and timeout."""
    from infra.prometheus import PrometheusClient

    return PrometheusClient(url, timeout=timeout, bearer_token=token)


@functools.cache
def _kube(url: str | None, timeout: float) -> KubeClient:
    from infra.kube import KubeClient

    if url:
        return KubeClient.from_url(url, timeout_seconds=timeout)
    return KubeClient.from_environment(timeout_seconds=timeout)


def kube_from(settings: KubeSettings, timeout: float | None = None) -> KubeClient:
    """The process's Kubernetes client: ``KUBE_API_URL``, else in-cluster, else ``KUBECONFIG``."""
    return _kube(settings.KUBE_API_URL, timeout or settings.KUBE_TIMEOUT_SECONDS)


def _forget_clients() -> None:
    """functions-framework builds the app (and so runs the cold start) in gunicorn's master, then
    forks the worker. A pool's connector threads do not survive a fork, so the worker forgets
    whatever was made before it and opens its own on first use (migrations: a no-op check)."""
    for cached in (database, _opencost, prometheus_from, _kube):
        cached.cache_clear()


os.register_at_fork(after_in_child=_forget_clients)


_database_lock = threading.Lock()


def database_from(settings: CommonSettings) -> Database:
    """The process's pool; one, however many threads ask first (the worker's background connect
    and its first requests: ``functools.cache`` alone would let each build a pool)."""
    with _database_lock:
        return database(
            settings.DATABASE_URL.get_secret_value(),
            settings.DATABASE_POOL,
            settings.DATABASE_POOL_MAX,
            settings.DATABASE_CONNECT_TIMEOUT_SECONDS,
            settings.MIGRATE_ON_START,
            Timeouts(settings.DATABASE_LOCK_TIMEOUT_SECONDS, settings.DATABASE_STATEMENT_TIMEOUT_SECONDS),
        )
