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
                          r"(papers|text|citations|split|pairs)\.json)$")
ALLOWED_DIR = re.compile(r"^(papers|fetch|documents|citations|splits|warc|_stats|rejects|pairs|negatives|"
                         r"text|split|dc|cc|bc|mix|split=(train|idt|odt)|[a-z&+]+)$")


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
    """Every file and folder under a build root has a name from the fixed layout."""
    bad = []
    for path in out.rglob("*"):
        rel = path.relative_to(out)
        if path.is_dir():
            if not ALLOWED_DIR.match(path.name):
                bad.append(f"dir {rel}")
        elif not ALLOWED_FILE.match(path.name):
            bad.append(f"file {rel}")
        if ".." in rel.parts:
            bad.append(f"escape {rel}")
    return bad


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


@pytest.mark.parametrize("stage_module", ["papers", "text", "citations", "split", "pairs"])
def test_writers_name_files_from_shard_numbers_only(stage_module):
    """Every Parquet write in a stage goes through `parquet_io.part_path` (shard numbers)
    or `WriteParquetShards`; no writer builds a path from a row's value."""
    src = (REPO / "pipelines" / f"{stage_module}.py").read_text("utf-8")
    for m in re.finditer(r"write_table\(([^\n]*)", src):
        assert "part_path(" in m.group(1) or "path" in m.group(1), m.group(0)
    assert "FileSystems.create(" not in src or stage_module in ("pairs", "citations", "split"), stage_module
