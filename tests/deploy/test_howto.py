"""The how-to guides (docs/how-to/*.md) show commands and YAML a reader copies as they are, so
each example must still be accepted by what it is written for:

- every ``finops ...`` command line of a ``sh`` block parses with the CLI's own argparse parser
  (a renamed option or subcommand fails here, not in a reader's shell);
- every YAML block that is a chargeback policy (a mapping with ``currency``) passes
  ``parse_policy``, as ``finops policy check`` would;
- every YAML block that is a PriceBook, Offering or Subscription is admitted by the CRD schemas
  and CEL rules of knative/crds (``tests.deploy.test_crds.admit``).

Nothing here runs a command; parsing is the whole check.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import build_parser
from finops.errors import InvalidInput
from finops.policy import parse_policy
from tests.deploy.test_crds import admit

HOWTO = Path(__file__).resolve().parents[2] / "docs" / "how-to"
FENCE = re.compile(r"^( *)```(\w+)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
SEPARATORS = {"|", "||", "&&", ";", "&", "(", ")"}
SUBSTITUTION = re.compile(r"\$\([^()]*\)")
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
CRD_KINDS = {"PriceBook", "Offering", "Subscription"}


def pages() -> list[Path]:
    return sorted(HOWTO.glob("*.md"))


def blocks(language: str) -> list[tuple[str, str]]:
    """``(where, text)`` of every fenced block of ``language`` in the how-to pages, dedented."""
    found = []
    for page in pages():
        for index, match in enumerate(FENCE.finditer(page.read_text())):
            if match[2] == language:
                found.append((f"{page.name} block {index}", textwrap.dedent(match[3])))
    return found


def finops_commands(script: str) -> list[list[str]]:
    """The arguments of each ``finops`` invocation in a shell snippet: continuation lines joined,
    comments dropped, split at line ends, pipes and separators, leading ``VAR=value`` assignments
    skipped, and each ``$(...)`` taken as one word."""
    script = script.replace("\\\n", " ")
    while SUBSTITUTION.search(script):  # innermost first
        script = SUBSTITUTION.sub("SUBSTITUTED", script)
    commands: list[list[str]] = []
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: list[str] = []
        for token in [*lexer, ";"]:
            if token not in SEPARATORS:
                current.append(token)
                continue
            while current and ASSIGNMENT.match(current[0]):
                current.pop(0)
            if current[:1] == ["finops"]:
                commands.append(current[1:])
            current = []
    return commands


def shell_commands() -> list[tuple[str, list[str]]]:
    return [(where, args) for where, text in blocks("sh") for args in finops_commands(text)]


def yaml_documents() -> list[tuple[str, Any]]:
    found = []
    for where, text in blocks("yaml"):
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            pytest.fail(f"{where} is not valid YAML: {exc}")
        found += [(where, doc) for doc in documents if doc is not None]
    return found


def test_the_pages_exist_and_have_examples() -> None:
    assert len(pages()) >= 14
    assert len(shell_commands()) >= 25
    assert sum(1 for _, doc in yaml_documents() if isinstance(doc, dict) and "currency" in doc) >= 6


@pytest.mark.parametrize(("where", "args"), shell_commands(), ids=lambda value: str(value)[:60])
def test_each_finops_command_parses(where: str, args: list[str]) -> None:
    if args[:1] == ["run"]:  # handed to the demo whole: its own parser
        return
    try:
        build_parser().parse_args(args)
    except SystemExit as exc:
        pytest.fail(f"{where}: finops {shlex.join(args)} is refused by the CLI (exit {exc.code})")


def test_the_command_finder_sees_through_shell_syntax() -> None:
    """The finder must not miss an invocation, or the test above would pass by seeing nothing."""
    script = 'A=1 B="x y" finops report budgets --policy p.yaml | head  # finops nothing\nfinops migrate && finops runs'
    assert finops_commands(script) == [["report", "budgets", "--policy", "p.yaml"], ["migrate"], ["runs"]]
    nested = 'finops report chargeback --month "$(date -u -d "$(date -u +%Y-%m-01) -1 day" +%Y-%m)" --policy p.yaml'
    assert finops_commands(nested) == [["report", "chargeback", "--month", "SUBSTITUTED", "--policy", "p.yaml"]]
    assert finops_commands("finops collect --from 2026-10-01 \\\n  --to 2026-11-01") == [
        ["collect", "--from", "2026-10-01", "--to", "2026-11-01"]
    ]


def test_every_policy_example_is_valid() -> None:
    policies = [(where, doc) for where, doc in yaml_documents() if isinstance(doc, dict) and "currency" in doc]
    for where, doc in policies:
        if not set(doc) - {"apiVersion", "kind", "metadata", "spec"}:  # a manifest, not a policy
            continue
        try:
            parse_policy(doc)
        except InvalidInput as exc:
            pytest.fail(f"{where}: {exc.message}")
    assert policies


def test_every_billing_object_is_admitted_by_its_crd() -> None:
    objects = [
        (where, doc) for where, doc in yaml_documents() if isinstance(doc, dict) and doc.get("kind") in CRD_KINDS
    ]
    assert {doc["kind"] for _, doc in objects} == CRD_KINDS
    for where, doc in objects:
        assert admit(doc) == [], where
