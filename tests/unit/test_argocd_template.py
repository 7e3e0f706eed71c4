"""We test these aspects of the Argo CD Notifications template we ship (knative/argocd/):

- it sends exactly the fields ``on_sync`` reads, under the same names;
- rendered with a realistic Application (Go's ``toJson`` is JSON encoding), the body passes
  the webhook's validation.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from functions.on_sync.webhook import BODY_FIELDS, SyncWebhook

TEMPLATE = Path(__file__).resolve().parents[2] / "knative" / "argocd" / "notifications.yaml"


def body_template() -> str:
    config = next(doc for doc in yaml.safe_load_all(TEMPLATE.read_text()) if doc["kind"] == "ConfigMap")
    webhook = yaml.safe_load(config["data"]["template.cost-on-sync"])["webhook"]["cost-on-sync"]
    assert webhook["method"] == "POST"
    return str(webhook["body"])


def render(template: str, app: dict[str, Any]) -> str:
    """A minimal Go-template renderer for ``{{ toJson .a.b.c }}`` (missing keys render null)."""

    def value(match: re.Match[str]) -> str:
        node: Any = {"app": app}
        for part in match[1].split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return json.dumps(node)

    return re.sub(r"\{\{\s*toJson\s+\.([\w.]+)\s*\}\}", value, template)


def test_the_template_sends_exactly_the_fields_on_sync_reads() -> None:
    fields = set(re.findall(r'"(\w+)":\s*\{\{', body_template()))
    assert fields == set(BODY_FIELDS)


def test_a_rendered_sync_passes_validation() -> None:
    app = {
        "metadata": {"name": "web", "namespace": "argocd"},
        "spec": {
            "project": "default",
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"},
        },
        "status": {
            "operationState": {
                "phase": "Succeeded",
                "finishedAt": "2026-11-29T10:00:00Z",
                "syncResult": {"revision": "abc123"},
            },
            "resources": [
                {
                    "group": "apps",
                    "version": "v1",
                    "kind": "Deployment",
                    "namespace": "shop",
                    "name": "web",
                    "status": "Synced",
                    "health": {"status": "Healthy"},
                }
            ],
        },
    }
    hook = SyncWebhook.parse(json.loads(render(body_template(), app)))
    assert hook.is_local and hook.syncResult == "Succeeded" and hook.destinationName is None
    assert hook.identity == "argocd:web" and hook.resources is not None and hook.resources[0].kind == "Deployment"
