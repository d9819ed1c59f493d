"""The embedded sample generator: determinism, real formats, languages and skew.

Every other stage's tests and the demo build from this sample, so these tests pin what the
rest of the project relies on: byte-identical output per seed, files that parse with the
same readers as the real dumps, and the properties (languages, hubs, failures, coverage
gaps) the pipeline must handle.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from openmsd_build.sample import generator
from openmsd_build.sample.pdf import make_pdf
from openmsd_build.sample.phrases import BANKS, SUBJECTS, make_text

SMALL = 300


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _truth(root: Path) -> list[dict]:
    with gzip.open(root / "truth.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _coci_rows(root: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in sorted((root / "opencitations").glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as fh:
            rows.extend(csv.DictReader(fh))
    return rows


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample_a")
    generator.generate(str(out), papers=SMALL, seed=7, warc=True)
    return out


@pytest.fixture(scope="module")
def small_again(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample_b")
    generator.generate(str(out), papers=SMALL, seed=7, warc=True)
    return out


@pytest.fixture(scope="module")
def medium(tmp_path_factory) -> Path:
    """Big enough that every language has dozens of papers (no WARC, to stay fast)."""
    out = tmp_path_factory.mktemp("sample_m")
    generator.generate(str(out), papers=4000, seed=11, warc=False)
    return out


def test_same_seed_is_byte_identical(small: Path, small_again: Path) -> None:
    a, b = _hashes(small), _hashes(small_again)
    assert set(a) >= {"manifest.json", "truth.jsonl.gz", "unpaywall/unpaywall_snapshot.jsonl.gz",
                      "crossref/part-00000.json.gz", "opencitations/coci-00000.csv", "warc/pages-00000.warc.gz"}
    assert a == b


def test_different_seed_differs(small: Path, tmp_path: Path) -> None:
    generator.generate(str(tmp_path), papers=SMALL, seed=8, warc=True)
    a, b = _hashes(small), _hashes(tmp_path)
    assert a.keys() == b.keys()
    differing = [k for k in a if a[k] != b[k]]
    assert len(differing) == len(a)  # every file, the manifest included (it holds the seed)


def test_gzip_headers_carry_no_name_or_time(small: Path) -> None:
    for path in [small / "truth.jsonl.gz", *small.glob("unpaywall/*.gz"), *small.glob("crossref/*.gz")]:
        head = path.read_bytes()[:10]
        assert head[:2] == b"\x1f\x8b"
        assert head[3] & 0x08 == 0, f"{path} has a file name in its gzip header"
        assert head[4:8] == b"\0\0\0\0", f"{path} has an mtime"


def test_manifest(small: Path) -> None:
    m = json.loads((small / "manifest.json").read_text())
    assert m["format"] == "openmsd-sample/1"
    assert m["papers"] == SMALL and m["seed"] == 7
    assert m["inputs"] == {"unpaywall": "unpaywall/*.jsonl.gz", "crossref": "crossref/*.json.gz",
                           "opencitations": "opencitations/*.csv", "warc": "warc/*.warc.gz"}
    for pattern in m["inputs"].values():
        assert list(small.glob(pattern)), pattern
    c = m["counts"]
    assert c["unpaywall_records"] + c["crossref_only"] == SMALL
    assert c["crossref_records"] + c["unpaywall_only"] == SMALL
    assert sum(c["languages"].values()) == SMALL


def test_unpaywall_records(small: Path) -> None:
    required = {"doi", "title", "year", "genre", "is_oa", "journal_name", "publisher", "z_authors", "oa_status",
                "best_oa_location", "oa_locations", "published_date", "doi_url", "updated", "data_standard"}
    loc_keys = {"url", "url_for_pdf", "url_for_landing_page", "license", "host_type", "version", "evidence", "is_best"}
    with gzip.open(small / "unpaywall" / "unpaywall_snapshot.jsonl.gz", "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    assert len(records) > SMALL * 0.8
    statuses = Counter()
    for r in records:
        assert required <= r.keys()
        assert r["doi"] == r["doi"].lower() and r["doi"].startswith("10.")
        statuses[r["oa_status"]] += 1
        if r["is_oa"]:
            assert r["best_oa_location"]["is_best"] is True
            for loc in r["oa_locations"]:
                assert loc_keys <= loc.keys()
                assert loc["url"].startswith("https://")
        else:
            assert r["best_oa_location"] is None and r["oa_locations"] == []
    assert {"gold", "green", "closed"} <= statuses.keys()
    assert any(r["best_oa_location"] and r["best_oa_location"]["url_for_pdf"] for r in records)


def test_no_publisher_registers_under_crossrefs_test_prefix() -> None:
    """One generated publisher registered its DOIs under 10.5555, Crossref's test prefix, so
    the papers stage flagged a fifth of the demo's papers as paratext (`test_doi`): the
    demo taught that real papers are test records."""
    from openmsd_build.papers.paratext import TEST_DOI_PREFIXES
    from openmsd_build.sample.generator import PUBLISHERS

    assert not [p.name for p in PUBLISHERS if (p.prefix + "/").startswith(TEST_DOI_PREFIXES)]


def test_crossref_items(small: Path) -> None:
    items = []
    for path in sorted((small / "crossref").glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
        assert list(doc) == ["items"]
        items.extend(doc["items"])
    assert len(items) > SMALL * 0.8
    dois = {it["DOI"].lower() for it in items}
    assert len(dois) == len(items)
    assert any(it["DOI"] != it["DOI"].lower() for it in items), "no mixed-case DOI"
    for it in items:
        assert isinstance(it["title"], list) and it["title"][0]
        assert it["issued"]["date-parts"][0][0] >= 2000
        assert set(it.get("subject", [])) <= set(SUBJECTS)
    abstracts = [it["abstract"] for it in items if "abstract" in it]
    assert abstracts and all("<jats:p>" in a for a in abstracts)
    assert any("<jats:title>" in a for a in abstracts)
    assert any("language" in it for it in items) and any("language" not in it for it in items)
    assert any(link["content-type"] == "application/pdf" for it in items for link in it.get("link", []))
    # preprint / journal pairs point at each other
    by_doi = {it["DOI"].lower(): it for it in items}
    preprints = [it for it in items if it["type"] == "posted-content"]
    assert preprints
    for pre in preprints:
        target = pre["relation"]["is-preprint-of"][0]["id"].lower()
        if target in by_doi:
            back = by_doi[target]["relation"]["has-preprint"][0]["id"].lower()
            assert back == pre["DOI"].lower()
            assert by_doi[target]["title"] == pre["title"]


def test_mathml_titles_exist(medium: Path) -> None:
    truth = _truth(medium)
    assert any(t["title_has_mathml"] for t in truth)


def test_coci_csv(small: Path) -> None:
    for path in (small / "opencitations").glob("*.csv"):
        assert path.read_text(encoding="utf-8").splitlines()[0] == generator.COCI_HEADER
    rows = _coci_rows(small)
    assert len(rows) > SMALL
    for r in rows:
        assert r["citing"] == r["citing"].lower() and r["cited"].startswith("10.")
        assert r["oci"] == generator.oci_part(r["citing"]) + "-" + generator.oci_part(r["cited"])
        assert r["journal_sc"] in ("yes", "no") and r["author_sc"] in ("yes", "no")


def test_oci_encoding_matches_real_coci() -> None:
    # a row of the real COCI dump (real-samples/opencitations/coci_rows_from_citecorp_api.csv)
    assert generator.oci_part("10.1108/jd-12-2013-0166") == "0200101000836191363010263020001036300010606"
    assert generator.oci_part("10.1038/sj.cdd.4401289") == "02001000308362819371213133704040001020809"


def test_warc_records_match_truth(small: Path) -> None:
    pdfium = pytest.importorskip("pypdfium2")
    from warcio.archiveiterator import ArchiveIterator

    truth = _truth(small)
    title_of_url = {u["url"]: t["title"] for t in truth for u in t["urls"]}
    status_of_url = {u["url"]: u["status"] for t in truth for u in t["urls"]}
    seen: dict[str, int] = {}
    kinds = Counter()
    with open(small / "warc" / "pages-00000.warc.gz", "rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type != "response":
                continue
            url = rec.rec_headers.get_header("WARC-Target-URI")
            status = int(rec.http_headers.get_statuscode())
            body = rec.content_stream().read()
            seen[url] = status
            ctype = rec.http_headers.get_header("Content-Type")
            if ctype == "application/pdf":
                assert body.startswith(b"%PDF-")
                doc = pdfium.PdfDocument(body)
                text = "".join(doc[k].get_textpage().get_text_range() for k in range(len(doc)))
                doc.close()
                assert " ".join(title_of_url[url].split()[:4]) in " ".join(text.split())
                kinds["pdf"] += 1
            else:
                assert ctype.startswith("text/html") and body.lstrip().startswith(b"<!DOCTYPE html>")
                if status == 200:
                    assert b'name="citation_title"' in body and b'name="citation_doi"' in body
                    kinds["html"] += 1
    assert kinds["pdf"] > 10 and kinds["html"] > 10
    assert Counter(seen.values()).keys() >= {200, 404, 500}
    for url, status in status_of_url.items():
        assert seen.get(url) == status, url  # None (absent) must be missing from the WARC
    assert any(s is None for s in status_of_url.values())


def test_landing_pages_vary_their_signals(small: Path) -> None:
    from warcio.archiveiterator import ArchiveIterator

    found = Counter()
    with open(small / "warc" / "pages-00000.warc.gz", "rb") as fh:
        for rec in ArchiveIterator(fh):
            if rec.rec_type == "response" and rec.http_headers.get_statuscode() == "200":
                body = rec.content_stream().read()
                for marker in (b'name="citation_abstract"', b'name="DC.description"', b'property="og:description"',
                               b'name="citation_language"', b'name="citation_pdf_url"', b"<html lang=", b"<html>",
                               b'class="article-body"'):
                    found[marker] += marker in body
    assert all(found[m] > 0 for m in found), found


def test_cld3_detects_each_language(medium: Path) -> None:
    gcld3 = pytest.importorskip("gcld3")
    detector = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=1000)
    per_lang: dict[str, list[bool]] = defaultdict(list)
    for t in _truth(medium):
        r = detector.FindLanguage(text=t["title"] + " " + t["abstract"])
        per_lang[t["language"]].append(r.language.split("-")[0] == t["language"])
    assert len(per_lang) >= 14
    rates = {lang: sum(v) / len(v) for lang, v in per_lang.items()}
    assert all(len(v) >= 15 for v in per_lang.values()), {k: len(v) for k, v in per_lang.items()}
    assert min(rates.values()) >= 0.9, rates


def test_phrase_banks_detected_directly() -> None:
    """Same check straight on the banks, 60 texts per language including review titles."""
    gcld3 = pytest.importorskip("gcld3")
    import random

    detector = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=1000)
    rng = random.Random(3)
    for lang, bank in BANKS.items():
        hits = 0
        for k in range(60):
            text = make_text(rng, lang, 2015, review=k % 6 == 0)
            hits += detector.FindLanguage(text=text.title + " " + text.abstract(bank.joiner)).language.split("-")[0] == lang
        assert hits / 60 >= 0.9, lang


def test_abstract_length_in_sentences() -> None:
    import random

    rng = random.Random(5)
    for lang in BANKS:
        for _ in range(50):
            assert 3 <= len(make_text(rng, lang, 2010).abstract_sentences) <= 6


def test_skew_and_coverage(medium: Path) -> None:
    truth = _truth(medium)
    langs = Counter(t["language"] for t in truth)
    assert len(langs) >= 14
    assert langs["en"] / len(truth) > 0.5
    assert langs.most_common(1)[0][0] == "en"
    assert {"zh", "ja", "ko", "ar", "ru"} <= langs.keys()
    # coverage gaps between the two metadata sources
    assert any(t["in_unpaywall"] and not t["in_crossref"] for t in truth)
    assert any(t["in_crossref"] and not t["in_unpaywall"] for t in truth)
    assert sum(t["in_unpaywall"] and t["in_crossref"] for t in truth) > 0.8 * len(truth)
    # fetch outcomes
    statuses = Counter(u["status"] for t in truth for u in t["urls"])
    assert statuses[200] > statuses[404] > 0 and statuses[500] > 0 and statuses[None] > 0
    # only Latin-script (cp1252) languages get PDFs
    assert not any(u["kind"] == "pdf" for t in truth if t["language"] in ("zh", "ja", "ko", "ar", "ru") for u in t["urls"])
    assert any(t["is_review"] for t in truth) and any(t["is_preprint"] for t in truth)


def test_citation_graph_shape(medium: Path) -> None:
    truth = _truth(medium)
    by_doi = {t["doi"]: t for t in truth}
    rows = _coci_rows(medium)
    distinct = {(r["citing"], r["cited"]) for r in rows}
    in_deg = Counter(cited for citing, cited in distinct if cited in by_doi and cited != citing)
    degrees = [in_deg.get(d, 0) for d in by_doi]
    assert max(degrees) > 20 * max(1, statistics.median(degrees))
    assert any(r["cited"] not in by_doi for r in rows)  # edges to DOIs outside the metadata
    pairs = Counter((r["citing"], r["cited"]) for r in rows)
    assert any(c > 1 for c in pairs.values())  # duplicate rows
    assert any(r["citing"] == r["cited"] for r in rows)  # self-citations
    out_deg = Counter(r["citing"] for r in rows)
    reviews = [out_deg[t["doi"]] for t in truth if t["is_review"]]
    ordinary_en = [out_deg[t["doi"]] for t in truth if t["language"] == "en" and not t["is_review"]]
    assert statistics.median(reviews) >= 50 and statistics.median(ordinary_en) <= 30
    assert any(out_deg[t["doi"]] == 0 and in_deg.get(t["doi"], 0) == 0 for t in truth)  # unlinked papers
    # non-English papers cite English or their own language
    lang_pairs = [(by_doi[r["citing"]]["language"], by_doi[r["cited"]]["language"])
                  for r in rows if r["cited"] in by_doi and r["citing"] != r["cited"]]
    xx = [(a, b) for a, b in lang_pairs if a != "en"]
    assert xx and sum(b in ("en", a) for a, b in xx) / len(xx) > 0.95
    # the truth's degrees agree with the CSV
    assert all(by_doi[d]["in_degree"] == n for d, n in in_deg.items())
    assert any(t["is_hub"] for t in truth)


def test_cli_no_warc(tmp_path: Path, capsys) -> None:
    from openmsd_build.cli import main

    assert main(["sample", "--out", str(tmp_path), "--papers", "60", "--seed", "3", "--no-warc"]) == 0
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert "warc" not in m["inputs"] and not (tmp_path / "warc").exists()
    assert m["papers"] == 60 and m["seed"] == 3
    assert "papers 60" in capsys.readouterr().out


def test_pdf_writer_roundtrip() -> None:
    pdfium = pytest.importorskip("pypdfium2")
    title = "Évaluation de la qualité (du sommeil) chez les adolescents"
    blocks = [("title", title), ("heading", "Résumé")] + [("para", "Les résultats montrent une association. " * 20)] * 15
    data = make_pdf(blocks, title=title)
    assert make_pdf(blocks, title=title) == data
    doc = pdfium.PdfDocument(io.BytesIO(data))
    assert len(doc) >= 2
    text = doc[0].get_textpage().get_text_range()
    assert title in text and "Résumé" in text
    assert doc.get_metadata_dict()["Title"] == title


def test_output_does_not_depend_on_worker_count(tmp_path: Path, monkeypatch) -> None:
    """Chunks have their own RNGs and fixed file names, so parallel runs write the same bytes."""
    monkeypatch.setattr(generator, "PAPER_CHUNK", 100)
    monkeypatch.setattr(generator, "CROSSREF_PAPERS_PER_FILE", 50)
    monkeypatch.setattr(generator, "CITE_CHUNK", 120)
    one, two = tmp_path / "one", tmp_path / "two"
    generator.generate(str(one), papers=260, seed=5, warc=True, workers=1)
    generator.generate(str(two), papers=260, seed=5, warc=True, workers=2)
    hashes = _hashes(one)
    assert hashes == _hashes(two)
    assert len([k for k in hashes if k.startswith("crossref/")]) == 6
    assert len([k for k in hashes if k.startswith("opencitations/")]) == 3
    with gzip.open(one / "unpaywall" / "unpaywall_snapshot.jsonl.gz", "rt") as fh:  # multi-member gzip
        assert sum(1 for _ in fh) == json.loads((one / "manifest.json").read_text())["counts"]["unpaywall_records"]


def test_a_sample_written_over_another_replaces_it(tmp_path, capsys):
    """A 5-paper sample written where a 5,001-paper one was left that one's second Crossref
    part, which the next build read with the new files (6 Crossref records for 5 papers). An
    earlier sample's files are removed first; a folder that is not a sample but holds folders
    of a sample's names is refused."""
    from openmsd_build.cli import main

    out = tmp_path / "s"
    assert main(["sample", "--out", str(out), "--papers", "20", "--seed", "1", "--no-warc"]) == 0
    (out / "crossref" / "part-00001.json.gz").write_bytes(b"an earlier, bigger sample's part")
    (out / "warc").mkdir()
    assert main(["sample", "--out", str(out), "--papers", "5", "--seed", "2", "--no-warc"]) == 0
    assert "note: replacing the sample" in capsys.readouterr().out
    assert sorted(p.name for p in (out / "crossref").iterdir()) == ["part-00000.json.gz"]
    assert not (out / "warc").exists()
    mine = tmp_path / "mine"
    (mine / "crossref").mkdir(parents=True)
    (mine / "crossref" / "works.json").write_text("{}")
    (mine / "manifest.json").write_text('{"name": "my dataset"}')  # a manifest, not a sample's
    assert main(["sample", "--out", str(mine), "--papers", "5"]) == 2
    assert "is not a sample (no sample's manifest.json) but holds crossref, manifest.json" in capsys.readouterr().err
    assert (mine / "crossref" / "works.json").exists()
