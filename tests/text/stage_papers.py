"""Papers for text-stage tests run end to end, and their documents: the helpers the tests that
compare a stage run with another (main-text deferral, PDF titles) share."""

from __future__ import annotations

from pathlib import Path

from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import DOCUMENTS, PAPERS
from openmsd_build.text.command import run_text
from openmsd_build.text.fetch.config import FetchConfig


def paper_row(doi: str, urls: list[tuple[str, str]], title: str | None = None,
              titles: list[str] | None = None) -> dict:
    """A `papers` row with the given (url, kind) URLs, in that order, and metadata titles."""
    return {
        "doi": doi, "title": title, "titles": titles, "abstract": None, "abstract_source": None,
        "categories": ["Biology"], "sources": ["unpaywall"], "n_records": 1, "relations": [],
        "urls": [{"url": u, "kind": k, "host_type": "repository", "license": None, "version": None,
                  "source": "unpaywall", "rank": i} for i, (u, k) in enumerate(urls)],
    }


def write_papers(out: Path, rows: list[dict]) -> None:
    """`rows` as the build's `papers/` under `out`."""
    parquet_io.write_table(parquet_io.table_from_rows(rows, PAPERS), parquet_io.part_path(str(out / "papers"), 0, 1))


def copy_papers(src: Path, dst: Path) -> None:
    """`src`'s `papers/` into a new build root `dst`."""
    (dst / "papers").mkdir(parents=True)
    for part in (src / "papers").glob("*.parquet"):
        (dst / "papers" / part.name).write_bytes(part.read_bytes())


def stage_documents(out: Path) -> dict[str, dict]:
    """The build's document rows by DOI."""
    return {r["doi"]: r for r in parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist()}


def fetch_live(out: Path, beam_args: list[str]) -> tuple[dict, dict[str, dict]]:
    """The stage fetching the papers under `out` live (`--fetch http`, from the tests' own
    server on 127.0.0.1): (its counts, its documents by DOI)."""
    config = FetchConfig(allow_networks=("127.0.0.0/8",), per_host_rate=None, max_retries=0, read_timeout=10)
    counts = run_text(str(out), "http", beam_args, config, extract_timeout=60)
    return counts, stage_documents(out)
