"""We test that the Reference lists what the code reads and that ``finops --help`` is plain text:

- every environment variable the product code reads (``os.environ``/``getenv`` and the helpers
  that read a variable named by their caller, the settings classes' fields) and every one the
  manifests in ``knative/`` set or use (``env`` names, ``$VAR`` in commands, ConfigMap and Secret
  keys) has its section in ``docs/reference/environment.md``. The scan is this test's own, not the
  generator's table, so code reading a new variable fails here until the variable is documented;
- every argument and subcommand of the ``finops`` parser tree (``finops run``'s own parser
  included) has a help line, no help text, description or epilog holds RST markup, and the
  commands people use most (``run``, ``collect``, ``report chargeback``, ``export focus``) have an
  epilog of 2 to 4 examples, each of which the parser accepts as the command it documents.

That each generated page is current: ``tests/integration/test_reference_pages.py``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import pkgutil
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pydantic_settings import BaseSettings

from cli.main import build_parser
from sandbox.run import build_parser as run_parser
from tools.reference import cli_parser

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("finops", "infra", "usecases", "functions", "cli")
ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
ENVIRONMENT_PAGE = ROOT / "docs" / "reference" / "environment.md"


# ---- environment variables ------------------------------------------------------------------------


def _is_environ(node: ast.expr, aliases: set[str]) -> bool:
    return ast.unparse(node) in aliases


def _reader_argument(node: ast.AST, aliases: set[str]) -> ast.expr | None:
    """The variable-name argument of an environment read: ``os.environ.get(X)``, ``os.getenv(X)``,
    ``os.environ[X]``, ``X in os.environ`` (``os.environ`` or a name bound to it)."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and _is_environ(func.value, aliases):
            return node.args[0]
        if ast.unparse(func) in ("os.getenv", "getenv"):
            return node.args[0]
    if isinstance(node, ast.Subscript) and _is_environ(node.value, aliases):
        return node.slice
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In | ast.NotIn)
        and _is_environ(node.comparators[0], aliases)
    ):
        return node.left
    return None


def environ_reads(source: str) -> set[str]:
    """The variables a module reads from the process environment, including through a helper
    whose parameter names the variable (``_url(flag, "FUNCTION_URL")``)."""
    tree = ast.parse(source)
    aliases = {"os.environ", "environ"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and "os.environ" in ast.unparse(node.value):
            aliases |= {ast.unparse(target) for target in node.targets}
    found: set[str] = set()
    helpers: dict[str, int] = {}
    for node in ast.walk(tree):
        argument = _reader_argument(node, aliases)
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            found.add(argument.value)
        if isinstance(node, ast.FunctionDef):
            parameters = [a.arg for a in node.args.args]
            for inner in ast.walk(node):
                named = _reader_argument(inner, aliases)
                if isinstance(named, ast.Name) and named.id in parameters:
                    helpers[node.name] = parameters.index(named.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            index = helpers[node.func.id]
            if index < len(node.args) and isinstance(node.args[index], ast.Constant):
                found.add(str(node.args[index].value))  # type: ignore[attr-defined]
    return found


def code_reads() -> dict[str, str]:
    """Variable -> the first product module found reading it."""
    out: dict[str, str] = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in environ_reads(path.read_text()):
                out.setdefault(name, str(path.relative_to(ROOT)))
    return out


def settings_fields() -> dict[str, str]:
    """Variable -> the settings class reading it, for every pydantic-settings class of infra.settings."""
    package = importlib.import_module("infra.settings")
    out: dict[str, str] = {}
    for info in pkgutil.iter_modules(package.__path__, "infra.settings."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseSettings) and value.__module__ == module.__name__:
                for name in value.model_fields:
                    out.setdefault(name, value.__name__)
    return out


def _manifest_names(node: object, found: dict[str, str], where: str) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "env" and isinstance(value, list):
                found.update({item["name"]: where for item in value if isinstance(item, dict) and "name" in item})
            elif key in ("command", "args") and isinstance(value, list):
                for text in value:
                    for name in re.findall(r"\$\{?\(?([A-Za-z_][A-Za-z0-9_]*)", str(text)):
                        found[name] = where
            else:
                _manifest_names(value, found, where)
        if node.get("kind") in ("ConfigMap", "Secret"):
            for key in ("data", "stringData"):
                found.update({k: where for k in node.get(key) or {} if ENV_NAME.fullmatch(k)})
    elif isinstance(node, list):
        for item in node:
            _manifest_names(item, found, where)


def manifest_reads() -> dict[str, str]:
    """Variable -> the manifest of ``knative/`` that sets or uses it."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "knative").rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            _manifest_names(document, found, str(path.relative_to(ROOT)))
    return found


def documented() -> set[str]:
    return set(re.findall(r"^## ([A-Z][A-Z0-9_]*)$", ENVIRONMENT_PAGE.read_text(), flags=re.MULTILINE))


def test_the_scan_finds_reads_of_every_kind() -> None:
    """The scan is not vacuous: reads through os.environ, an alias of it, a helper, the settings
    classes and the manifests are all found."""
    code = code_reads()
    assert {"FINOPS_DEBUG", "FUNCTION_TARGET", "FOCUS_INVOICE_ISSUER"} <= code.keys()  # os.environ.get / [...]
    assert {"KUBERNETES_SERVICE_HOST", "KUBECONFIG"} <= code.keys()  # env = os.environ ...; env.get(...)
    assert {"MAX_PINGS", "MAX_TIME", "FUNCTION_URL"} <= code.keys()  # _number(flag, "MAX_PINGS", ...)
    assert {"DATABASE_URL", "MTO_ENABLED", "THREADS", "K_SINK"} <= settings_fields().keys()
    assert {"JOB_NAME", "CLOUD_RUN_TIMEOUT_SECONDS", "MTO_OPENCOST", "CI_TOKEN"} <= manifest_reads().keys()
    assert environ_reads('import os\nx = os.environ.get("NEW_ONE")\ny = os.getenv("OTHER")') == {"NEW_ONE", "OTHER"}


def test_every_variable_the_code_reads_is_in_the_reference() -> None:
    listed = documented()
    sources = {**manifest_reads(), **settings_fields(), **code_reads()}
    missing = sorted(f"{name} ({where})" for name, where in sources.items() if name not in listed)
    assert not missing, (
        "read but not in docs/reference/environment.md: "
        + ", ".join(missing)
        + ". Add a settings field with its docstring, or a row to OTHER_VARIABLES in tools/reference.py, "
        "then run make docs."
    )


# ---- finops --help -----------------------------------------------------------------------------------

RST = re.compile(r"``|:[a-z]+:`|^\.\. [a-z-]+::|`[^`\n]+`_\b|^\s*\.\. ", re.MULTILINE)


def walk(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from walk(sub)


PARSERS = {p.prog: p for p in walk(cli_parser())}


def test_the_tree_is_walked_whole() -> None:
    assert {"finops", "finops run", "finops report chargeback", "finops export focus", "finops ping"} <= PARSERS.keys()


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_every_argument_and_subcommand_has_a_help_line(prog: str) -> None:
    parser = PARSERS[prog]
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if not action.help:
            missing.append(action.dest)
        if isinstance(action, argparse._SubParsersAction):
            helped = {choice.dest for choice in action._choices_actions if choice.help}
            missing += sorted(set(action.choices) - helped)  # add_parser(name) without help: no choice action
    assert not missing, f"{prog}: no help line for {missing}"
    assert parser.description, f"{prog}: no description"


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_help_is_plain_text(prog: str) -> None:
    parser = PARSERS[prog]
    texts = [parser.description or "", parser.epilog or "", parser.format_help()]
    for action in parser._actions:
        texts.append(action.help or "")
        if isinstance(action, argparse._SubParsersAction):
            texts += [choice.help or "" for choice in action._choices_actions]
    marked = [m.group(0) for text in texts for m in [RST.search(text)] if m]
    assert not marked, f"{prog}: RST markup in its help: {marked}"


def examples(epilog: str) -> list[str]:
    """The command lines of an epilog (a ``\\`` continuation joined, ``VAR=value`` prefixes and a
    ``> file`` redirection dropped)."""
    lines = epilog.replace("\\\n", " ").splitlines()
    commands = []
    for line in lines:
        if not re.match(r"\s*([A-Z_]+=\S+\s+)*finops\s", line):
            continue  # what the example does
        words = shlex.split(line)
        while words and "=" in words[0] and ENV_NAME.fullmatch(words[0].split("=")[0]):
            words = words[1:]
        if words[:1] == ["finops"]:
            commands.append(shlex.join(words[: words.index(">")] if ">" in words else words))
    return commands


@pytest.mark.parametrize("prog", ["finops run", "finops collect", "finops report chargeback", "finops export focus"])
def test_the_commands_used_most_have_examples_the_parser_accepts(prog: str) -> None:
    epilog = PARSERS[prog].epilog or ""
    found = examples(epilog)
    assert 2 <= len(found) <= 4, f"{prog}: {len(found)} examples in its epilog, not 2 to 4"
    for command in found:
        argv = shlex.split(command)[1:]
        assert " ".join(["finops", *argv]).startswith(prog), f"{prog}'s example is another command: {command}"
        if prog == "finops run":
            run_parser().parse_args(argv[1:])  # exits (SystemExit) on a bad example
        else:
            args = build_parser().parse_args(argv)
            assert callable(args.func), command


def test_finops_help_prints_no_markup(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: finops") and not RST.search(out)
