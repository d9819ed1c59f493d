"""Static and output-layout security checks.

- No `eval(`, `exec(`, unpickling (`pickle.load(s)`, `cloudpickle.load`, `dill.load`,
  `marshal.load`, `shelve.open`), `yaml.load` without SafeLoader, `shell=True` or
  `os.system` anywhere in the shipped source tree.
- Output file names never come from record content: every file a build writes matches the
  fixed layout (part-NNNNN-of-NNNNN.parquet, fetch-<uuid hex>.warc.gz, _stats/<stage>.json);
  a papers stage fed DOIs and origins shaped like paths (`../../x`, `/tmp/evil`, NUL) writes
  nothing outside its folders.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("openmsd_build", "pipelines", "schemas", "bench", "deploy")
FORBIDDEN = [
    (re.compile(r"(?<![\w.])eval\s*\("), "eval("),
    (re.compile(r"(?<![\w.])exec\s*\("), "exec("),
    (re.compile(r"\b(?:c?pickle|cloudpickle|dill|marshal)\.loads?\s*\("), "unpickling"),
    (re.compile(r"\bshelve\.open\s*\("), "shelve"),
    (re.compile(r"shell\s*=\s*True"), "shell=True"),
    (re.compile(r"\bos\.system\s*\("), "os.system"),
    (re.compile(r"\bos\.popen\s*\("), "os.popen"),
]
YAML_LOAD = re.compile(r"\byaml\.(?:load|load_all)\s*\(([^)]*)\)")

ALLOWED_FILE = re.compile(r"^(part-\d{5}-of-\d{5}\.parquet|fetch-[0-9a-f]{32}\.warc\.gz|"
                          r"(papers|text|citations|split|pairs|contexts)\.json)$")
# Folders by their whole path under the build root (core/layout.py): a stage's folders, its
# rejects, the pairs' relation / mix / split folders; nothing else.
_STAGE = r"(?:papers|text|citations|split|pairs|contexts)"
_SPLIT = r"split=(?:train|idt|odt)"
ALLOWED_DIR = re.compile(rf"^(?:papers|fetch|documents|citations|splits|contexts|warc|_stats|negatives|"
                         rf"negatives/{_SPLIT}|rejects|rejects/{_STAGE}|pairs|pairs/(?:dc|cc|bc|ccs|mix)|"
                         rf"pairs/(?:dc|cc|bc|ccs)/{_SPLIT}|"
                         rf"pairs/mix/[a-z]+(?:_(?:or|and)_[a-z]+)*(?:/{_SPLIT})?)$")


def _sources():
    for d in SOURCE_DIRS:
        root = REPO / d
        if root.is_dir():
            yield from sorted(p for p in root.rglob("*.py") if ".venv" not in p.parts)


def test_no_eval_exec_unpickling_or_shell():
    found = []
    for path in _sources():
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            for pattern, what in FORBIDDEN:
                if pattern.search(code):
                    found.append(f"{path.relative_to(REPO)}:{n}: {what}: {line.strip()}")
            for m in YAML_LOAD.finditer(code):
                if "SafeLoader" not in m.group(1) and "CSafeLoader" not in m.group(1):
                    found.append(f"{path.relative_to(REPO)}:{n}: yaml.load without SafeLoader")
    assert found == []


def test_static_scan_catches_what_it_should(tmp_path):
    """The patterns themselves work (so an empty result above means something)."""
    bad = ["x = eval(s)", "exec(code)", "pickle.loads(b)", "subprocess.run(c, shell=True)", "os.system('x')"]
    for line in bad:
        assert any(p.search(line) for p, _ in FORBIDDEN), line
    assert not any(p.search("model.evaluate(x)") or p.search("ast.literal_eval(x)") for p, _ in FORBIDDEN)


def check_layout(out: Path) -> list[str]:
    """Every file and folder under a build root has a path from the fixed layout, and none
    leads outside the root (a link written from record content would)."""
    bad = []
    root = out.resolve()
    for path in out.rglob("*"):
        rel = path.relative_to(out)
        if path.is_dir():
            if not ALLOWED_DIR.match(rel.as_posix()):
                bad.append(f"dir {rel}")
        elif not ALLOWED_FILE.match(path.name):
            bad.append(f"file {rel}")
        if path.is_symlink() or not path.resolve().is_relative_to(root):
            bad.append(f"escape {rel}")
    return bad


def test_layout_check_flags_unknown_folders_and_escapes(tmp_path):
    """The check itself: a folder named like a value, a part file in a folder outside the
    layout, and a link out of the root are each reported; the layout's own paths are not."""
    out = tmp_path / "out"
    for folder in ("papers", "rejects/citations", "pairs/cc/split=idt", "pairs/mix/dc_or_cc/split=train"):
        (out / folder).mkdir(parents=True)
    (out / "papers" / "part-00000-of-00001.parquet").write_bytes(b"")
    assert check_layout(out) == []
    (out / "papers" / "evil").mkdir()
    (out / "documents" / "cc").mkdir(parents=True)
    (out / "rejects" / "etc").mkdir()
    (out / "link").symlink_to(tmp_path)
    assert sorted(check_layout(out)) == ["dir documents/cc", "dir link", "dir papers/evil", "dir rejects/etc",
                                         "escape link"]


@pytest.mark.timeout(1200)  # may be the first user of the session's two builds
def test_clean_build_file_names_follow_the_layout(clean_builds):
    for out in clean_builds:
        assert check_layout(out) == []


def test_hostile_record_content_never_names_a_file(tmp_path):
    from openmsd_build.papers.command import run_papers

    evil = tmp_path / "evil"
    inputs = tmp_path / "in"
    inputs.mkdir()
    records = [
        {"doi": "10.1234/../../../evil", "title": "../../etc/passwd", "oa_locations": [
            {"url_for_pdf": "http://x.org/../../../tmp/evil", "host_type": "../x"}]},
        {"doi": f"10.1234/{'a/' * 100}b", "title": "/tmp/evil"},
        {"doi": "/tmp/evil", "title": "x"},  # rejected: the reject row must not name a file either
        {"doi": "10.1234/%2e%2e%2fevil", "title": "\x00nul"},
        {"doi": "10.1234/" + "x" * 300},
    ]
    (inputs / "u.jsonl.gz").write_bytes(gzip.compress("\n".join(json.dumps(r) for r in records).encode()))
    (inputs / "c.json").write_text(json.dumps({"items": [{"DOI": "10.1234/../evil", "title": ["../../x"]}]}))
    out = tmp_path / "out"
    run_papers(str(out), {"unpaywall": [str(inputs / "u.jsonl.gz")], "crossref": [str(inputs / "c.json")]}, [])
    assert check_layout(out) == []
    assert not evil.exists() and not any(p.name == "evil" for p in tmp_path.rglob("*"))


# Writer calls whose path is not a `part_path(...)` of the same function, each with where its
# file name comes from (the check below fails on any other, and on an entry that no longer
# matches a call).
FIXED_NAME_WRITERS = {
    ("core/parquet_io.py", "write_table"): "the writer itself: its caller's path",
    ("core/parquet_io.py", "encode"): "a memory buffer",
    ("core/parquet_io.py", "write_tables"): "a local temporary folder's part.parquet, copied by _put_file",
    ("core/parquet_io.py", "_put"): "the writer itself (write_bytes, _put_file): <its caller's path>.tmp, renamed",
    ("core/beam_io.py", "_WriteJson.process"): "_stats/<stage>.json (layout.stats_path)",
    ("core/spill.py", "write_piece"): "_tmp spill pieces: <tag>/<shard>/<uuid4 hex>.arrow",
    ("core/stats.py", "update_stage_stats"): "_stats/<stage>.json (layout.stats_path)",
    ("core/staging.py", "replace_entries"): "<its partial folder>/.entries (SWAP_LIST): the swap's own list",
    ("text/beam.py", "WholeRecordFile._open"): "fetch-<uuid4 hex>.warc.gz (its caller, text/beam.py)",
    ("text/fetch/warc_store.py", "WarcWriter.__init__"): "its caller's fetch-<uuid4 hex>.warc.gz",
}
_WRITERS = {"write_table": 1, "write_bytes": 1, "write_tables": 2}  # -> the path's argument


def _is_part_path(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "part_path"


def writer_calls(source: str) -> list[tuple[str, int, bool]]:
    """(enclosing function, line, path made by `part_path`) of every file-writing call in a
    module: `write_table` / `write_bytes(data, path)`, `write_tables(tables, schema, path)`,
    `FileSystems.create(path)` and
    `ParquetWriter(path)`. A path is made by `part_path` when the argument is such a call or
    a name the same function assigns from one."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, scope: list[str], parts: set[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = set()
            if not isinstance(node, ast.ClassDef):
                inner = {t.id for n in ast.walk(node) if isinstance(n, ast.Assign) and _is_part_path(n.value)
                         for t in n.targets if isinstance(t, ast.Name)}
            for child in ast.iter_child_nodes(node):
                visit(child, [*scope, node.name], inner)
            return
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            last = name.split(".")[-1]
            target = None
            if last in _WRITERS and len(node.args) > _WRITERS[last]:
                target = node.args[_WRITERS[last]]
            elif name.endswith("FileSystems.create") or last == "ParquetWriter":
                target = node.args[0] if node.args else None
            if target is not None:
                made = _is_part_path(target) or (isinstance(target, ast.Name) and target.id in parts)
                found.append((".".join(scope), node.lineno, made))
        for child in ast.iter_child_nodes(node):
            visit(child, scope, parts)

    visit(ast.parse(source), [], set())
    return found


@pytest.mark.parametrize("package", ["papers", "text", "citations", "split", "pairs", "contexts", "core"])
def test_writers_name_files_from_shard_numbers_only(package):
    """Every file a stage writes is named by `parquet_io.part_path` (shard numbers) or is one
    of the fixed names above; no writer builds a path from a row's value. Scans where the
    writers are: the stage's package and its `pipelines/` module."""
    root = REPO / "openmsd_build"
    files = sorted((root / package).rglob("*.py"))
    if (REPO / "pipelines" / f"{package}.py").exists():
        files.append(REPO / "pipelines" / f"{package}.py")
    calls, unnamed = 0, []
    for path in files:
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        for function, line, made in writer_calls(path.read_text("utf-8")):
            calls += 1
            if not made:
                unnamed.append((rel, function, line))
    assert calls > 0, f"no writer call found under {package}: the scan looks in the wrong place"
    assert [u for u in unnamed if u[:2] not in FIXED_NAME_WRITERS] == []
    listed = {k for k in FIXED_NAME_WRITERS if k[0].split("/")[0] == package}
    assert listed <= {u[:2] for u in unnamed}, "an entry of FIXED_NAME_WRITERS matches no call any more"


def test_writer_scan_flags_a_path_from_row_content():
    """The scan itself: a path built from a value fails, `part_path` passes."""
    bad = (
        "def write(rows, directory):\n"
        "    for row in rows:\n"
        "        parquet_io.write_table(table, join_path(directory, row['doi'] + '.parquet'))\n"
        "        with FileSystems.create(directory + row['title']) as f:\n"
        "            f.write(b'')\n"
    )
    assert writer_calls(bad) == [("write", 3, False), ("write", 4, False)]
    good = "def w(d, s):\n    path = part_path(d, s, 4)\n    write_table(t, path)\n    write_table(t, part_path(d, 0, 1))\n"
    assert writer_calls(good) == [("w", 3, True), ("w", 4, True)]
