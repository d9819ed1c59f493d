"""`bench/text_real_bench.py --copies`: each copy of a real document is its own paper and its
own archived URL, so the stage extracts every copy (a copy sharing a DOI or a URL with
another would be joined or deduplicated away, and the per-document ratio would be wrong)."""

from __future__ import annotations

from pathlib import Path


def test_copies_are_papers_and_records_of_their_own(real_samples: Path, tmp_path: Path, repo_script) -> None:
    from openmsd_build.core import parquet_io
    from openmsd_build.text.fetch.warc_index import index_warc_file

    bench = repo_script("bench/text_real_bench.py")
    files = bench.sample_files(real_samples)
    assert files
    papers, n_docs = bench.prepare(real_samples, tmp_path / "data", copies=2)
    assert n_docs == 2 * len(files)
    rows = parquet_io.read_table(str(papers), columns=["doi", "urls", "title"]).to_pylist()
    assert len({row["doi"] for row in rows}) == n_docs
    urls = [row["urls"][0]["url"] for row in rows]
    assert len(set(urls)) == n_docs
    # copy 0 is the one-copy run's documents, as they always were
    first = files[0][0]
    assert rows[0]["doi"] == "10.0/real.0" and urls[0] == f"{bench.HOST}/{first.parent.name}/{first.name}"
    assert sum(url.startswith(f"{bench.HOST}/c1/") for url in urls) == len(files)
    # every paper of a PDF has its title, as a real build's papers have (the truth's, whole)
    titles = {f"{p.parent.name}/{p.name}": row["title"] for (p, _kind), row in zip(files, rows, strict=False)}
    assert all(row["title"] for row in rows if row["urls"][0]["kind"] == "pdf")
    assert titles["pdf-multilingual/scielo-dsm__rsp_0034-8910-rsp-47-02-0231.pdf"].startswith("Diferenças entre as")
    assert not any(title for name, title in titles.items() if name.startswith("html/"))  # cut short there: none
    index = list(index_warc_file(str(tmp_path / "data" / "warc" / "real.warc.gz")))
    assert len(index) == n_docs and len({row["url"] for row in index}) == n_docs
