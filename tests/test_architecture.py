"""The shape of the code: dependencies point down, and no module reaches for another's privates.

Layers, bottom first: ``knowhub`` (project plumbing) and ``rag`` (index, search, answers);
``ingestion`` and ``feedback`` on rag, independent of each other; ``sessions`` on top. Where a
lower app needs a higher one (feedback's learned ranking in search, its interaction log behind
the ask pipeline, the personal data another app holds), the lower app offers a registration hook
and the higher app registers in its ``AppConfig.ready``.

The import tests read the source with ``ast`` (every import, including those inside functions)
and do not import the project, so they need no database; the last runs ruff's limits.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("knowhub", "rag", "ingestion", "feedback", "sessions", "identity")

# The project apps each app may import (besides itself). Django, celery and the like are free.
MAY_IMPORT = {
    "knowhub": set(),
    "rag": {"knowhub"},
    "ingestion": {"knowhub", "rag"},
    "feedback": {"knowhub", "rag"},
    "sessions": {"knowhub", "rag", "ingestion", "feedback"},
    "identity": {"knowhub", "rag"},  # sign-in: its groups become rag's projects
}
# The root URLconf wires every app's views in: it is the one module above all of them.
COMPOSITION_ROOTS = {"knowhub/urls.py"}

def _python_files():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue  # generated; they name other apps' models by design (dependencies)
            yield app, path, path.relative_to(ROOT).as_posix()


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _module_name(rel: str) -> str:
    parts = rel[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, rel: str) -> str:
    """The module an ``ImportFrom`` reads from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    package = _module_name(rel).split(".")
    if not rel.endswith("__init__.py"):
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported_modules(tree: ast.Module, rel: str):
    """(line, dotted module) of every import, and of ``import_module("x.y")`` with a literal."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, _absolute(node, rel)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def layer_violations() -> list[str]:
    found = []
    for app, path, rel in _python_files():
        if rel in COMPOSITION_ROOTS:
            continue
        for line, module in _imported_modules(_parse(path), rel):
            top = module.split(".")[0]
            if top in APPS and top != app and top not in MAY_IMPORT[app]:
                found.append(f"{rel}:{line}: {app} imports {module} (a higher layer)")
    return found


def test_dependencies_point_down():
    found = layer_violations()
    assert not found, "A lower app imports a higher one (register a hook instead):\n" + "\n".join(found)


def _is_project_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return dotted.split(".")[0] in APPS and (path.with_suffix(".py").exists() or (path / "__init__.py").exists())


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def private_name_uses() -> list[str]:
    found = []
    for _app, path, rel in _python_files():
        tree = _parse(path)
        this = _module_name(rel)
        modules: dict[str, str] = {}  # local name -> project module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        modules[alias.asname] = alias.name
                    else:
                        modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(node, rel)
                for alias in node.names:
                    if _is_project_module(f"{source}.{alias.name}"):
                        modules[alias.asname or alias.name] = f"{source}.{alias.name}"
                    elif _private(alias.name) and source != this and source.split(".")[0] in APPS:
                        found.append(f"{rel}:{node.lineno}: imports {alias.name} from {source}")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not _private(node.attr):
                continue
            owner = _dotted(node.value)
            if owner is None:
                continue
            head, _, rest = owner.partition(".")
            if head not in modules:
                continue
            module = ".".join(filter(None, [modules[head], rest]))
            if module != this and _is_project_module(module):
                found.append(f"{rel}:{node.lineno}: uses {module}.{node.attr}")
    return found


def test_no_private_names_across_modules():
    found = private_name_uses()
    assert not found, "A module uses another module's private name (give it a public one):\n" + "\n".join(found)


def test_ruff_limits_hold():
    """Line length and complexity limits (pyproject's [tool.ruff]) hold for the whole tree."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", str(ROOT)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
