"""We test these aspects of the namespace-label ValidatingAdmissionPolicy we ship:

- each CEL rule, as written in the manifest, is evaluated by a real CEL implementation against
  labelled, unlabelled and partly labelled namespaces (messages name the namespace);
- the binding starts in Warn/Audit, not Deny.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cel
import pytest
import yaml

MANIFEST = Path(__file__).resolve().parents[2] / "knative" / "policies" / "namespace-owner-labels.yaml"
DOCS = list(yaml.safe_load_all(MANIFEST.read_text()))
POLICY = next(d for d in DOCS if d["kind"] == "ValidatingAdmissionPolicy")
BINDING = next(d for d in DOCS if d["kind"] == "ValidatingAdmissionPolicyBinding")


def failures(labels: dict[str, str] | None) -> list[str]:
    meta: dict[str, Any] = {"name": "shop"}
    if labels is not None:
        meta["labels"] = labels
    context = {"object": {"metadata": meta}}
    return [
        str(cel.evaluate(rule["messageExpression"], context))
        for rule in POLICY["spec"]["validations"]
        if cel.evaluate(rule["expression"], context) is not True
    ]


@pytest.mark.parametrize(
    ("labels", "missing"),
    [
        ({"team": "checkout", "cost-center": "cc-1"}, []),
        (None, ["team", "cost-center"]),
        ({}, ["team", "cost-center"]),
        ({"team": "checkout"}, ["cost-center"]),
        ({"team": "", "cost-center": "cc-1"}, ["team"]),
    ],
    ids=["owned", "no-labels", "empty-labels", "no-cost-center", "empty-team"],
)
def test_rules_as_written(labels: dict[str, str] | None, missing: list[str]) -> None:
    messages = failures(labels)
    assert len(messages) == len(missing)
    for message, label in zip(messages, missing, strict=True):
        assert "namespace shop" in message and f"no {label} label" in message


def test_binding_starts_in_warn_and_audit() -> None:
    assert BINDING["spec"]["policyName"] == POLICY["metadata"]["name"]
    assert BINDING["spec"]["validationActions"] == ["Warn", "Audit"]
