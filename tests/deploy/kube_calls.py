"""Which Kubernetes API calls a function target can make, read from its source code.

A call is ``kube.<method>(group, version, plural, ...)`` where ``<method>`` is a ``KubeClient``
method (``infra.kube.METHOD_VERBS``); group and plural are constants or module-level names. A
call whose group or plural is a variable is declared by the caller (``dynamic``), and one that is
not is an error naming the line. A method that needs no Role rule (``METHOD_VERBS`` maps it to
``None``: discovery, ``api_resources``) is not a call here.

Reachability is by reference, and conservative: starting from the target's handler (its cold
start, ``functions.warmup``, reads its settings and database only), a top-level function or
class of the ``functions`` or ``usecases`` package is reached when a reached definition (or the module-level
code of any module the target imports) names it, directly or through an imported name or a
module alias; a reached class brings all its methods. A definition
never named from the target's code is not reached, so importing a model from a module that also
calls the API does not grant that module's calls.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from infra.kube import METHOD_VERBS
from tests.deploy.manifests import ROOT

OURS = ("functions", "usecases")  # the edges and the use cases they call; infra holds the adapters
Definition = tuple[str, str]  # (module, top-level function or class name)
Call = tuple[str, str, str]  # (KubeClient method, API group, plural)


@dataclass(frozen=True)
class CallSite:
    module: str
    line: int
    definition: str  # the top-level definition containing it ("<module>" at top level)
    innermost: str  # the innermost function containing it
    method: str
    group: str | None  # None: not resolvable statically
    plural: str | None


def module_file(module: str) -> Path | None:
    path = ROOT.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def all_modules() -> list[str]:
    return sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for package in OURS
        for path in (ROOT / package).rglob("*.py")
    )


@dataclass
class Module:
    name: str
    tree: ast.Module
    definitions: dict[str, ast.AST] = field(default_factory=dict)
    # local name -> (module, attribute); attribute None when the name is a module alias
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)


@cache
def parse(name: str) -> Module:
    path = module_file(name)
    assert path is not None, name
    module = Module(name, ast.parse(path.read_text(), filename=str(path)))
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            module.definitions[node.name] = node
    for node in ast.walk(module.tree):  # imports anywhere (also the lazy ones inside functions)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith(OURS):
            for alias in node.names:
                local = alias.asname or alias.name
                submodule = f"{node.module}.{alias.name}"
                module.imports[local] = (submodule, None) if module_file(submodule) else (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(OURS) and alias.asname:
                    module.imports[alias.asname] = (alias.name, None)
    return module


def imported_modules(name: str) -> set[str]:
    """``name`` and every module of the package it imports, transitively."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for target, _ in parse(current).imports.values():
            parts = target.split(".")
            todo.extend(".".join(parts[:i]) for i in range(1, len(parts) + 1) if module_file(".".join(parts[:i])))
    return seen


def _resolve(module: str, name: str, depth: int = 0) -> set[Definition]:
    parsed = parse(module)
    if name in parsed.definitions:
        return {(module, name)}
    if name in parsed.imports and depth < 10:
        target, attribute = parsed.imports[name]
        if attribute is not None and module_file(target):
            return _resolve(target, attribute, depth + 1)  # follows re-exports
    return set()


def references(module: str, nodes: list[ast.AST]) -> set[Definition]:
    found: set[Definition] = set()
    aliases = parse(module).imports
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Name):
                found |= _resolve(module, node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                alias = aliases.get(node.value.id)
                if alias is not None and alias[1] is None:
                    found |= _resolve(alias[0], node.attr)
    return found


def _module_level(module: str) -> list[ast.AST]:
    """What runs at import: statements, decorators, defaults, base classes (not bodies)."""
    nodes: list[ast.AST] = []
    for node in parse(module).tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defaults = [d for d in node.args.kw_defaults if d is not None]
            nodes.extend([*node.decorator_list, *node.args.defaults, *defaults])
        elif isinstance(node, ast.ClassDef):
            nodes.extend([*node.decorator_list, *node.bases])
        else:
            nodes.append(node)
    return nodes


@cache
def reached(target: str) -> frozenset[Definition]:
    entry = f"functions.{target}.main"
    todo = [(entry, target)]
    for module in imported_modules(entry):
        todo.extend(references(module, _module_level(module)))
    seen: set[Definition] = set()
    while todo:
        definition = todo.pop()
        if definition in seen or definition[1] not in parse(definition[0]).definitions:
            continue
        seen.add(definition)
        todo.extend(references(definition[0], [parse(definition[0]).definitions[definition[1]]]))
    return frozenset(seen)


def _constant(module: object, node: ast.expr) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and hasattr(module, node.id):
        return getattr(module, node.id)
    raise LookupError(ast.unparse(node))


@cache
def call_sites(module: str) -> tuple[CallSite, ...]:
    """Every ``kube.<method>(...)`` in ``module``; group and plural resolved where possible."""
    parsed = parse(module)
    path = module_file(module)
    imported = importlib.import_module(module)
    top: dict[ast.AST, str] = {}
    inner: dict[ast.AST, str] = {}
    for node in ast.walk(parsed.tree):
        top.setdefault(node, "<module>")
        inner.setdefault(node, "<module>")
    for name, definition in parsed.definitions.items():
        for node in ast.walk(definition):
            top[node] = name
    for function in ast.walk(parsed.tree):  # outer functions come before the ones they contain
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                inner[node] = function.name
    sites: list[CallSite] = []
    for node in ast.walk(parsed.tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and METHOD_VERBS.get(node.func.attr) is not None  # None: no permission needed (discovery)
        ):
            continue
        receiver = node.func.value
        where = f"{path.relative_to(ROOT) if path else module}:{node.lineno}"
        assert isinstance(receiver, ast.Name) and receiver.id == "kube", (
            f"{where}: call the Kubernetes adapter through a variable named `kube`, so the RBAC test sees the call"
        )
        values: list[object] = []  # group, version, plural: the first three positional arguments
        try:
            for arg in node.args:
                if len(values) >= 3:
                    break
                if isinstance(arg, ast.Starred):
                    values.extend(_constant(imported, arg.value))  # type: ignore[call-overload]
                else:
                    values.append(_constant(imported, arg))
            group, plural = str(values[0]), str(values[2])
        except LookupError:
            group = plural = None
        sites.append(CallSite(module, node.lineno, top[node], inner[node], node.func.attr, group, plural))
    return tuple(sites)


def calls(target: str, dynamic: Mapping[tuple[str, str], list[tuple[str, str]]]) -> set[Call]:
    """The calls the target can make; ``dynamic[(module, function)]`` lists the (group, plural)
    pairs of a call site whose arguments are variables."""
    found: set[Call] = set()
    for module, definition in reached(target):
        for site in call_sites(module):
            if site.definition != definition:
                continue
            if site.group is None or site.plural is None:
                key = (site.module, site.innermost)
                assert key in dynamic, (
                    f"{site.module}:{site.line}: kube.{site.method} takes its group or plural from a variable; "
                    f"declare the (group, plural) pairs it may be called with in DYNAMIC_CALLS[{key!r}] and grant them"
                )
                found |= {(site.method, group, plural) for group, plural in dynamic[key]}
            else:
                found.add((site.method, site.group, site.plural))
    return found
