"""Every third-party module the library imports is declared in setup.py's install_requires
(a plain `pip install .` with an old pip must give a working extraction worker)."""

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


def _imported() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "openmsd_build").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "openmsd_build"}


def test_every_imported_distribution_is_declared() -> None:
    by_module = packages_distributions()
    declared = _declared()
    missing = []
    for module in sorted(_imported()):
        dists = {d.lower().replace("_", "-") for d in by_module.get(module, [module])}
        if not dists & declared:
            missing.append(f"{module} (distribution {', '.join(sorted(dists))})")
    assert not missing, f"imported but not in install_requires: {missing}"


def test_html_cleaner_is_declared_and_importable() -> None:
    assert "lxml-html-clean" in _declared()
    import lxml.html.clean  # noqa: F401  - what jusText (trafilatura) imports in the extraction worker
