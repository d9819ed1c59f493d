"""Every third-party module the library imports is declared in setup.py's install_requires
(a plain `pip install .` with an old pip must give a working extraction worker); a module
imported only inside `try: ... except ImportError` (an optional feature) may be declared in
an extra instead."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> set[str]:
    text = (ROOT / "setup.py").read_text(encoding="utf-8")
    start = text.index("INSTALL_REQUIRES = [")
    block = text[start:text.index("\n]", start)]
    names = re.findall(r'^\s*"([A-Za-z0-9_.\-]+)', block, re.M)
    return {n.lower().replace("_", "-") for n in names}


def _declared_in_extras() -> set[str]:
    text = (ROOT / "setup.py").read_text(encoding="utf-8")
    block = text[text.index("extras_require={"):]
    names = re.findall(r'^\s*"([A-Za-z0-9_.\-]+)[^"]*",', block, re.M)
    return {n.lower().replace("_", "-") for n in names}


def _module_names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name.split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return {node.module.split(".")[0]}
    return set()


def _guarded(tree: ast.AST) -> set[int]:
    """ids of import nodes inside a `try` that catches ImportError."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers
        ):
            ids.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return ids


def _imports(optional: bool) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "openmsd_build").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = _guarded(tree)
        for node in ast.walk(tree):
            if (id(node) in guarded) == optional:
                found |= _module_names(node)
    return {m for m in found if m not in sys.stdlib_module_names and m != "openmsd_build"}


def _imported() -> set[str]:
    return _imports(optional=False)


def test_every_imported_distribution_is_declared() -> None:
    by_module = packages_distributions()
    declared = _declared()
    missing = []
    for module in sorted(_imported()):
        dists = {d.lower().replace("_", "-") for d in by_module.get(module, [module])}
        if not dists & declared:
            missing.append(f"{module} (distribution {', '.join(sorted(dists))})")
    assert not missing, f"imported but not in install_requires: {missing}"


def test_optional_imports_are_declared_in_an_extra() -> None:
    by_module = packages_distributions()
    declared = _declared() | _declared_in_extras()
    missing = [m for m in sorted(_imports(optional=True) - _imported())
               if not {d.lower().replace("_", "-") for d in by_module.get(m, [m])} & declared]
    assert not missing, f"optional imports declared nowhere in setup.py: {missing}"


def test_html_cleaner_is_declared_and_importable() -> None:
    assert "lxml-html-clean" in _declared()
    import lxml.html.clean  # noqa: F401  - what jusText (trafilatura) imports in the extraction worker
