"""Prometheus adapter: the only importer of httpx for Prometheus's HTTP API."""

from infra.prometheus.client import PrometheusClient, Sample

__all__ = ["PrometheusClient", "Sample"]
