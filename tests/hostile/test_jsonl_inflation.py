"""A gzip JSON Lines file that inflates into a flood of lines (a 1 MB gzip of newlines is
1 GB) is a compression bomb: the line reader spun through it for six minutes per MB of gzip
(an hour for 10 MB), yielding nothing and counting nothing. Now, past `MAX_INFLATION` times
the compressed bytes read (and at least `INFLATION_FLOOR`), the rest of the file is one
`compression_bomb` reject: the records before it are kept, counts reconcile, the stage warns.
Real snapshot files (5-9x) are read whole. The floor and check interval are lowered here so
the test inflates megabytes, not a gigabyte."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from test_amplification import _gzip_stream

from openmsd_build.core import json_records
from openmsd_build.core.notices import stage_warnings
from openmsd_build.papers.join import read_source_file


@pytest.fixture()
def small_floor(monkeypatch):
    monkeypatch.setattr(json_records, "INFLATION_FLOOR", 1 << 20)
    monkeypatch.setattr(json_records, "INFLATION_CHECK_BYTES", 64 << 10)


def _gzip(path: Path, parts) -> None:
    _gzip_stream(path, parts, level=9)


def _read(path: Path, source: str = "unpaywall") -> tuple[list[str], list[str], dict]:
    dois, reasons, counts = [], [], {}
    for tag, value in read_source_file(str(path), source, 2):
        if tag == "batch":
            dois += value[1].column("doi").to_pylist()
        elif tag == "reject":
            reasons.append(value["reason"])
        else:
            counts = value
    return sorted(dois), reasons, counts


@pytest.mark.parametrize("unit", [b"\n", b"  \n", b"{}\n"])
def test_a_flood_of_lines_is_one_compression_bomb_reject(tmp_path, small_floor, unit):
    path = tmp_path / "bomb.jsonl.gz"
    _gzip(path, [b'{"doi": "10.1000/before"}\n', *(unit * ((1 << 20) // len(unit)) for _ in range(40)),
                 b'{"doi": "10.1000/after"}\n'])
    assert path.stat().st_size < 200 << 10  # 40 MB of lines from a gzip this small: > 200x
    dois, reasons, counts = _read(path)
    assert dois == ["10.1000/before"]
    assert counts["rejected.unpaywall.compression_bomb"] == 1
    # its reject row, unless the file's reject rows were used up (by a flood of `{}`: no_doi)
    assert reasons[-1] == "compression_bomb" or counts.get("rejects_suppressed.unpaywall")
    rejected = sum(v for k, v in counts.items() if k.startswith("rejected."))
    assert counts["read.unpaywall"] == len(dois) + rejected  # reconciles
    warnings = stage_warnings("papers", {**counts, "written": len(dois)})
    assert any("compression_bomb" in w for w in warnings), warnings


def test_real_snapshot_files_are_read_whole_under_the_ratio(real_sample, small_floor):
    """The real Unpaywall snapshot sample (7 MB of lines from a 0.9 MB gzip) is read whole even
    with the floor lowered below its size: its ratio (7-8x) is far under `MAX_INFLATION`."""
    path = Path(real_sample("unpaywall/ezunpaywall_snapshot.jsonl.gz"))
    _, reasons, counts = _read(path)
    assert "compression_bomb" not in reasons
    plain = sum(1 for line in gzip.open(path) if line.strip())
    assert counts["read.unpaywall"] == plain


def test_an_uncompressed_file_is_never_a_bomb(tmp_path, small_floor):
    path = tmp_path / "plain.jsonl"
    path.write_bytes(b'{"doi": "10.1000/a"}\n' + b"\n" * (4 << 20) + b'{"doi": "10.1000/b"}\n')
    dois, reasons, _ = _read(path)
    assert dois == ["10.1000/a", "10.1000/b"] and reasons == []
