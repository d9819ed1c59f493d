"""Core is shared by every stage and imports none of them: a stage reads another stage's
Parquet, and what two stages share lives in core; the report, too, reads a build's outputs
and no stage's code. Checked on the source (every import statement of every module, also
those inside functions), so a lazy import cannot hide."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "openmsd_build" / "core"
ALLOWED = ("openmsd_build.core", "openmsd_build.schemas", "schemas")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import; `from openmsd_build import text` names the module
    it imports, `openmsd_build.text` (the package alone says nothing)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "openmsd_build" and node.level == 0:
            found += [(node.lineno, f"openmsd_build.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_core_imports_no_stage() -> None:
    modules = sorted(CORE.glob("*.py"))
    assert len(modules) > 10
    wrong = [(p.name, line, name) for p in modules for line, name in _imports(p)
             if (name == "openmsd_build" or name.startswith("openmsd_build.")) and not name.startswith(ALLOWED)]
    assert wrong == []


def test_the_check_sees_a_lazy_stage_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from openmsd_build.text.fetch.spec import FetchSpec\n    return FetchSpec\n")
    assert _imports(module) == [(2, "openmsd_build.text.fetch.spec")]


def test_the_report_reads_no_stage_code() -> None:
    """The report is built from a build's outputs (Parquet and `_stats/`): a stage's rules can
    change without the report importing them."""
    from openmsd_build.core.stages import STAGES

    packages = {s.command.rsplit(".", 1)[0] for s in STAGES}  # openmsd_build.papers, ...
    modules = sorted((CORE.parent / "report").glob("*.py"))
    assert len(modules) > 3
    wrong = [(p.name, line, name) for p in modules for line, name in _imports(p)
             if any(name == pkg or name.startswith(pkg + ".") for pkg in packages)]
    assert wrong == []
