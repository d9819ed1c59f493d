"""The embedded sample: Unpaywall, Crossref, OpenCitations and a WARC of the scraped pages,
in their real formats, plus the generator's ground truth.

Why generated rather than copied: the real samples are a few hundred records with no shared
DOIs, so they cannot exercise the joins, the citation graph, the language skew or the fetch
failures the pipeline must survive. This generator makes one coherent world — the same DOIs
in every source (with the case and coverage differences of the real sources), a power-law
citation graph, fourteen-plus languages with realistic skew, and pages that answer 200, 404,
500 or nothing — and writes down the truth so tests can check what the pipeline recovers.

Determinism: everything comes from `random.Random` instances derived from the seed (one for
the plan, one per citing paper's references, two per paper for text and for everything else,
one per paper for its in-text citations and Crossref reference list: `sample.citing`),
gzip headers carry no time or name, WARC dates and record ids are derived from the seed and
URL. Same seed and size give byte-identical files.

Scale: the plan keeps a few bytes per paper in arrays; records are generated and written one
paper at a time, so memory stays small and 1M papers write in a few minutes.
"""

from __future__ import annotations

import bisect
import calendar
import functools
import gzip
import hashlib
import io
import json
import os
import random
import shutil
from array import array
from dataclasses import dataclass, field
from typing import IO, Any

from openmsd_build.sample.citing import plan_citations
from openmsd_build.sample.pages import PageContent, error_html, landing_html, paper_pdf
from openmsd_build.sample.phrases import BANKS, CONCEPT_SUBJECTS, make_authors, make_paragraphs, make_text

FORMAT = "openmsd-sample/1"
CROSSREF_PAPERS_PER_FILE = 5000  # a Crossref file holds the records of 5000 consecutive papers
PAPER_CHUNK = 50_000  # papers per worker task (a multiple of CROSSREF_PAPERS_PER_FILE)
CITE_CHUNK = 250_000  # citing papers per COCI file / worker task
GZIP_LEVEL = 3
COCI_HEADER = "oci,citing,cited,creation,timespan,journal_sc,author_sc"

# Language mix (percent of papers): English majority, a few big languages, a long tail.
LANGUAGE_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("en", 60), ("de", 5), ("fr", 4), ("es", 4), ("pt", 4), ("ja", 3.5), ("zh", 3.5), ("ru", 3),
    ("it", 2.5), ("ko", 2), ("pl", 2), ("tr", 2), ("id", 2), ("nl", 1.5), ("ar", 1),
)
LANGS: tuple[str, ...] = tuple(code for code, _ in LANGUAGE_WEIGHTS)
# Languages whose text fits the PDF writer's WinAnsiEncoding; the others get landing pages only.
PDF_LANGS = frozenset({"en", "de", "fr", "es", "pt", "it", "nl", "id"})

# Journal field names by concept (see phrases.CONCEPT_SUBJECTS) and per-publisher name styles.
FIELDS: tuple[str, ...] = (
    "Adolescent Health", "Environmental Microbiology", "Coastal Research", "Hydrogeology",
    "Supply Chain Management", "Student Wellbeing", "Wetland Ecology", "Climate and Society",
    "Urban Mobility", "Waste Studies", "Science Education", "Hydrogen Energy", "Machine Learning",
    "Photovoltaics", "Protein Science", "Soil Biology", "Urban Climate", "Gut Microbiology",
    "Intelligent Systems", "Cardiovascular Prevention", "Battery Research", "Child Language",
)


@dataclass(frozen=True)
class Publisher:
    host: str
    name: str
    prefix: str
    style: str  # journal name template with {f}
    upper_doi: bool  # registers DOIs with upper-case suffixes (Crossref keeps the case)
    landing: str  # URL templates with {suffix}
    pdf: str
    weight: float


PUBLISHERS: tuple[Publisher, ...] = (
    Publisher("journals.example-press.org", "Example Press", "10.55500", "Journal of {f}", False,
              "https://journals.example-press.org/article/{suffix}", "https://journals.example-press.org/article/{suffix}/pdf", 22),
    Publisher("www.example-science.com", "Example Science Publishing Group", "10.55501", "International Journal of {f}", True,
              "https://www.example-science.com/doi/{suffix}", "https://www.example-science.com/doi/pdf/{suffix}", 15),
    Publisher("link.example-springs.net", "Example Springs Media", "10.55502", "Annals of {f}", False,
              "https://link.example-springs.net/article/{suffix}", "https://link.example-springs.net/content/pdf/{suffix}.pdf", 12),
    Publisher("academic.example-univpress.edu", "Example University Press", "10.55503", "{f} Quarterly", True,
              "https://academic.example-univpress.edu/journals/article/{suffix}", "https://academic.example-univpress.edu/journals/article-pdf/{suffix}.pdf", 8),
    Publisher("www.example-openaccess.org", "Example Open Access Foundation", "10.55504", "Open {f}", False,
              "https://www.example-openaccess.org/articles/{suffix}", "https://www.example-openaccess.org/articles/{suffix}/download", 7),
    Publisher("revistas.example-univ.edu.co", "Universidad Example", "10.55505", "Revista de {f}", False,
              "https://revistas.example-univ.edu.co/index.php/rev/article/view/{suffix}", "https://revistas.example-univ.edu.co/index.php/rev/article/download/{suffix}.pdf", 5),
    Publisher("www.example-jstage.jp", "Example Society of Science", "10.55506", "Transactions on {f}", True,
              "https://www.example-jstage.jp/article/{suffix}/_article", "https://www.example-jstage.jp/article/{suffix}/_pdf", 5),
    Publisher("ojs.example-journals.id", "Example Journals Indonesia", "10.55507", "Jurnal {f}", False,
              "https://ojs.example-journals.id/index.php/j/article/view/{suffix}", "https://ojs.example-journals.id/index.php/j/article/download/{suffix}.pdf", 4),
    Publisher("www.example-scholar.ru", "Example Scholar", "10.55508", "Bulletin of {f}", False,
              "https://www.example-scholar.ru/article/{suffix}", "https://www.example-scholar.ru/article/{suffix}.pdf", 4),
    Publisher("journals.example-society.org", "Example Learned Society", "10.55509", "Proceedings in {f}", False,
              "https://journals.example-society.org/doi/full/{suffix}", "https://journals.example-society.org/doi/pdf/{suffix}", 4),
    Publisher("www.example-mdpress.com", "Example MD Press", "10.55511", "{f} Reports", False,
              "https://www.example-mdpress.com/{suffix}/htm", "https://www.example-mdpress.com/{suffix}/pdf", 6),
    Publisher("dergi.example-akademi.org.tr", "Example Akademi", "10.55512", "{f} Dergisi", False,
              "https://dergi.example-akademi.org.tr/tr/pub/issue/{suffix}", "https://dergi.example-akademi.org.tr/tr/download/article-file/{suffix}", 3),
    Publisher("www.example-kjournal.or.kr", "Example Korean Society", "10.55513", "Korean Journal of {f}", True,
              "https://www.example-kjournal.or.kr/article/{suffix}", "https://www.example-kjournal.or.kr/upload/pdf/{suffix}.pdf", 3),
    Publisher("www.example-cnki.cn", "Example Science China", "10.55514", "Chinese Journal of {f}", False,
              "https://www.example-cnki.cn/article/{suffix}", "https://www.example-cnki.cn/article/{suffix}/pdf", 2),
)
PREPRINT_HOST = Publisher("preprints.example-archive.org", "Example Preprint Archive", "10.55510", "Example Preprint Archive", False,
                          "https://preprints.example-archive.org/abs/{suffix}", "https://preprints.example-archive.org/pdf/{suffix}.pdf", 0)
# Repositories holding green copies, with their own skew.
REPOSITORIES: tuple[tuple[str, str, float], ...] = (
    ("repository.example.edu", "Example University Institutional Repository", 40),
    ("eprints.example-uni.ac.uk", "Example University ePrints", 20),
    ("hal.example-archives.fr", "Example Open Archive", 15),
    ("zenodo.example-data.org", "Example Data Repository", 12),
    ("europepmc.example-med.org", "Example Biomedical Archive", 8),
    ("dspace.example-tech.nl", "Example Technical University Repository", 5),
)
_MEMBER_IDS = {pub.prefix: str(1000 + k) for k, pub in enumerate(PUBLISHERS)}
OUTSIDE_PREFIX = "10.55599"  # DOIs cited in OpenCitations but absent from the metadata

WARC_DATE = "2024-03-01T00:00:00Z"


def _cumulative(weights: list[float]) -> list[float]:
    total, out = 0.0, []
    for w in weights:
        total += w
        out.append(total)
    return [x / total for x in out]


_LANG_CUM = _cumulative([w for _, w in LANGUAGE_WEIGHTS])
_PUB_CUM = _cumulative([p.weight for p in PUBLISHERS])
_REPO_CUM = _cumulative([w for _, _, w in REPOSITORIES])

KIND_NORMAL, KIND_REVIEW, KIND_WITH_PREPRINT, KIND_PREPRINT = 0, 1, 2, 3
SRC_BOTH, SRC_UNPAYWALL_ONLY, SRC_CROSSREF_ONLY = 0, 1, 2


def _pick(cum: list[float], u: float) -> int:
    return min(bisect.bisect_right(cum, u), len(cum) - 1)


@dataclass
class Plan:
    """A few bytes per paper, drawn once from `Random(seed)`; everything else derives from it."""

    n: int
    seed: int
    lang: bytearray
    year: array
    month: bytearray
    pub: bytearray
    concept: bytearray
    src: bytearray
    kind: bytearray

    def is_preprint(self, i: int) -> bool:
        return self.kind[i] == KIND_PREPRINT

    def suffix(self, i: int) -> str:
        """DOI suffix as registered (upper-case for publishers that register it so)."""
        if self.kind[i] == KIND_PREPRINT:
            return f"eparchive.{self.year[i]}.{i:07d}"
        pub = PUBLISHERS[self.pub[i]]
        code = _journal_code(pub, self.concept[i])
        s = f"{code}.{self.year[i]}.{i:07d}"
        return s.upper() if pub.upper_doi else s

    def publisher(self, i: int) -> Publisher:
        return PREPRINT_HOST if self.kind[i] == KIND_PREPRINT else PUBLISHERS[self.pub[i]]

    def doi(self, i: int) -> str:
        """The DOI as Crossref registers it (mixed case for some publishers)."""
        return f"{self.publisher(i).prefix}/{self.suffix(i)}"

    def doi_key(self, i: int) -> str:
        """The normalized (lower-case) DOI, as Unpaywall and OpenCitations write it."""
        return self.doi(i).lower()

    def day(self, i: int) -> int:
        return 1 + (i * 7 + self.seed) % 28


@functools.lru_cache(maxsize=4096)
def _journal_code(pub: Publisher, concept: int) -> str:
    name = pub.style.format(f=FIELDS[concept])
    return "".join(w[0] for w in name.replace("-", " ").split() if w[0].isalpha()).lower()


@functools.lru_cache(maxsize=4096)
def journal_name(pub: Publisher, concept: int) -> str:
    return pub.style.format(f=FIELDS[concept])


@functools.lru_cache(maxsize=4096)
def issn_for(name: str) -> str:
    """A syntactically valid ISSN (correct check digit) derived from the journal name."""
    digits = [int(c) for c in f"{int(hashlib.sha1(name.encode()).hexdigest(), 16) % 10**7:07d}"]
    total = sum(d * w for d, w in zip(digits, range(8, 1, -1), strict=True))
    check = (11 - total % 11) % 11
    return f"{digits[0]}{digits[1]}{digits[2]}{digits[3]}-{digits[4]}{digits[5]}{digits[6]}{'X' if check == 10 else check}"


def make_plan(n: int, seed: int) -> Plan:
    """Draw language, year, publisher, field, source coverage and kind for `n` papers.

    The first papers cycle through every language (when n allows) so that even a small
    sample has all of them; preprint/journal pairs occupy consecutive indices.
    """
    rng = random.Random(seed)
    lang, month, pub, concept, src, kind = (bytearray(n) for _ in range(6))
    year = array("H", bytes(2 * n))
    guaranteed = len(LANGS) * 2 if n >= 10 * len(LANGS) else 0
    i = 0
    while i < n:
        li = i % len(LANGS) if i < guaranteed else _pick(_LANG_CUM, rng.random())
        lang[i] = li
        year[i] = 2000 + int(24 * rng.random() ** 0.6)  # more recent papers
        month[i] = 1 + rng.randrange(12)
        pub[i] = _pick(_PUB_CUM, rng.random())
        concept[i] = rng.randrange(len(BANKS[LANGS[li]].topics))
        u = rng.random()
        src[i] = SRC_UNPAYWALL_ONLY if u < 0.05 else SRC_CROSSREF_ONLY if u < 0.10 else SRC_BOTH
        v = rng.random()
        if v < 0.025 and LANGS[li] in ("en", "de", "fr", "es", "ru", "zh", "ja"):
            kind[i] = KIND_REVIEW
        elif v < 0.06 and i + 1 < n:
            # a journal article (i) and its preprint (i + 1): same language, field and text
            kind[i], kind[i + 1] = KIND_WITH_PREPRINT, KIND_PREPRINT
            lang[i + 1], concept[i + 1] = li, concept[i]
            year[i + 1] = max(2000, year[i] - rng.randint(0, 1))
            month[i + 1] = 1 + rng.randrange(12)
            pub[i + 1] = pub[i]
            src[i + 1] = SRC_CROSSREF_ONLY if rng.random() < 0.5 else SRC_BOTH
            i += 2
            continue
        i += 1
    return Plan(n=n, seed=seed, lang=lang, year=year, month=month, pub=pub, concept=concept, src=src, kind=kind)


# ---------------------------------------------------------------------------------------------
# OpenCitations (COCI CSV)

_OCI_TABLE = {ord(c): f"{k:02d}" for k, c in enumerate("0123456789abcdefghijklmnopqrstuvwxyz/.")}
_OCI_TABLE[ord("-")] = "63"
_OCI_TABLE[ord("_")] = "64"


def oci_part(doi_key: str) -> str:
    """The COCI encoding of one DOI: supplier prefix 020 + two digits per character after `10.`."""
    return "020" + doi_key[3:].translate(_OCI_TABLE)


def _timespan(y1: int, m1: int, y2: int, m2: int) -> str:
    months = (y1 - y2) * 12 + (m1 - m2)
    sign = "-" if months < 0 else ""
    months = abs(months)
    return f"{sign}P{months // 12}Y{months % 12}M"


@dataclass
class CitationResult:
    in_degree: array
    out_in_sample: array
    out_outside: array
    self_cited: bytearray
    refs: dict[int, list[str]]
    counts: dict[str, int]


def _ref_count(rng: random.Random, lang: str, kind: int) -> int:
    """How many references a paper lists: reviews many, English 5–30, other languages few."""
    if kind == KIND_REVIEW:
        return rng.randint(50, 200)
    u = rng.random()
    if lang == "en":
        return 0 if u < 0.12 else 1 + int(rng.random() * 4) if u < 0.25 else 5 + int(rng.random() * 26)
    return 0 if u < 0.40 else 1 + int(rng.random() * 5) if u < 0.85 else 5 + int(rng.random() * 11)


class _CiteContext:
    """Shared, read-only inputs of the citation chunks (inherited by forked workers)."""

    def __init__(self, plan: Plan, out_dir: str, keep_refs: bool) -> None:
        self.plan, self.out_dir, self.keep_refs = plan, out_dir, keep_refs
        self.pools: list[array] = [array("I") for _ in LANGS]
        for i in range(plan.n):
            self.pools[plan.lang[i]].append(i)
        self.keys = [plan.doi_key(i) for i in range(plan.n)]
        self.oci = [oci_part(k) for k in self.keys]


def _cite_chunk(ctx: _CiteContext, chunk: int) -> tuple[int, dict[str, Any]]:
    """Write `coci-<chunk>.csv` for citing papers of one chunk; return degree contributions.

    Each chunk has its own RNG (seed, chunk), so the files do not depend on how many worker
    processes ran. Targets follow a power law over each pool (the lowest indices of a pool
    are its hubs), so in-degree is heavy-tailed. English papers cite English papers; other
    papers cite their own language or English. About 6% of references point outside the
    metadata; a few self-citations and duplicate rows are added on purpose.
    """
    plan, pools, keys, oci = ctx.plan, ctx.pools, ctx.keys, ctx.oci
    n = plan.n
    lo, hi = chunk * CITE_CHUNK, min(n, (chunk + 1) * CITE_CHUNK)
    in_degree = array("I", bytes(4 * n))
    out_in, out_out = array("I", bytes(4 * (hi - lo))), array("I", bytes(4 * (hi - lo)))
    self_cited = bytearray(hi - lo)
    refs: dict[int, list[str]] = {}
    counts = {"coci_rows": 0, "coci_duplicates": 0, "coci_self_citations": 0, "coci_outside": 0}
    duplicates: list[str] = []
    rng = random.Random(plan.seed * 1_000_003 + chunk)
    r = rng.random
    en_pool = pools[0]
    buf: list[str] = []
    path = os.path.join(ctx.out_dir, f"coci-{chunk:05d}.csv")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(COCI_HEADER + "\n")
        for i in range(lo, hi):
            li = plan.lang[i]
            k = _ref_count(rng, LANGS[li], plan.kind[i])
            if k == 0:
                continue
            own = pools[li]
            yi = plan.year[i]
            targets: dict[int | str, None] = {}
            for _ in range(k):
                u = r()
                if u < 0.06:
                    targets[f"{OUTSIDE_PREFIX}/ext.{int(4 * n * r() ** 2):08d}"] = None
                    continue
                if li == 0:
                    pool = en_pool if u < 0.95 else pools[_pick(_LANG_CUM, r())] or en_pool
                else:
                    pool = own if u < 0.5 else en_pool
                t = pool[int(len(pool) * r() ** 2.6)]
                if plan.year[t] > yi + 1 and r() < 0.85:
                    t = pool[int(len(pool) * r() ** 2.6)]  # papers mostly cite older work
                if t != i:
                    targets[t] = None
            if r() < 0.01:
                targets[i] = None  # self-citation
            m1 = plan.month[i]
            creation = f"{yi}-{m1:02d}-{plan.day(i):02d}" if i % 5 else f"{yi}-{m1:02d}"
            head = f"{oci[i]}-"
            citing_key = keys[i]
            kept: list[str] = []
            for t in targets:
                if isinstance(t, str):
                    cited_key, cited_oci, span, jsc = t, oci_part(t), "", "no"
                    out_out[i - lo] += 1
                    counts["coci_outside"] += 1
                else:
                    cited_key, cited_oci = keys[t], oci[t]
                    span = _timespan(yi, m1, plan.year[t], plan.month[t])
                    jsc = "yes" if plan.pub[t] == plan.pub[i] and plan.concept[t] == plan.concept[i] else "no"
                    if t == i:
                        self_cited[i - lo] = 1
                        counts["coci_self_citations"] += 1
                    else:
                        in_degree[t] += 1
                        out_in[i - lo] += 1
                asc = "yes" if t == i or r() < 0.03 else "no"
                row = f"{head}{cited_oci},{citing_key},{cited_key},{creation},{span},{jsc},{asc}\n"
                buf.append(row)
                kept.append(cited_key)
                if r() < 0.004:
                    duplicates.append(row)
            if ctx.keep_refs:
                refs[i] = kept
            if len(buf) >= 8192:
                fh.write("".join(buf))
                counts["coci_rows"] += len(buf)
                buf.clear()
        buf.extend(duplicates)  # real dumps repeat some rows, far from the first copy
        fh.write("".join(buf))
        counts["coci_rows"] += len(buf)
    counts["coci_duplicates"] = len(duplicates)
    return chunk, {"in_degree": in_degree, "out_in": out_in, "out_out": out_out, "self": self_cited,
                   "refs": refs, "counts": counts}


def write_citations(plan: Plan, out_dir: str, keep_refs: bool, workers: int = 1) -> CitationResult:
    """Write the COCI CSV files (one per chunk of citing papers) and merge their degrees."""
    os.makedirs(out_dir, exist_ok=True)
    ctx = _CiteContext(plan, out_dir, keep_refs)
    chunks = range((plan.n + CITE_CHUNK - 1) // CITE_CHUNK)
    n = plan.n
    in_degree = array("I", bytes(4 * n))
    out_in, out_out, self_cited = array("I"), array("I"), bytearray()
    refs: dict[int, list[str]] = {}
    counts = {"coci_rows": 0, "coci_files": len(chunks), "coci_duplicates": 0, "coci_self_citations": 0, "coci_outside": 0}
    for _, part in sorted(_run_chunks(_cite_chunk, ctx, chunks, workers), key=lambda kv: kv[0]):
        contrib = part["in_degree"]
        for i in range(n):
            if contrib[i]:
                in_degree[i] += contrib[i]
        out_in.extend(part["out_in"])
        out_out.extend(part["out_out"])
        self_cited.extend(part["self"])
        refs.update(part["refs"])
        for k, v in part["counts"].items():
            counts[k] += v
    return CitationResult(in_degree, out_in, out_out, self_cited, refs, counts)


_CTX: Any = None


def _call_in_worker(args: tuple[Any, int]) -> Any:
    func, chunk = args
    return func(_CTX, chunk)


def _run_chunks(func, ctx: Any, chunks: range, workers: int) -> list[Any]:
    """Run `func(ctx, chunk)` for every chunk, in forked worker processes when asked.

    The context is handed over by fork inheritance (a module global), not pickled, because
    it holds per-paper arrays. Results are identical whatever the number of workers.
    """
    global _CTX
    workers = min(workers, len(chunks))
    if workers > 1:
        import multiprocessing

        try:
            mp = multiprocessing.get_context("fork")
        except ValueError:
            mp = None
        if mp is not None:
            _CTX = ctx
            try:
                with mp.Pool(workers) as pool:
                    return pool.map(_call_in_worker, [(func, c) for c in chunks], chunksize=1)
            finally:
                _CTX = None
    return [func(ctx, c) for c in chunks]


# ---------------------------------------------------------------------------------------------
# Papers


@dataclass
class Url:
    url: str
    kind: str  # landing | pdf
    host_type: str  # publisher | repository
    status: int | None  # 200, 404, 500, or None when absent from the WARC


@dataclass
class Paper:
    """One generated paper with everything the writers need."""

    i: int
    doi: str
    key: str
    lang: str
    year: int
    month: int
    day: int
    kind: int
    src: int
    title: str
    crossref_title: str
    title_has_mathml: bool
    abstract: str
    authors: list[dict[str, str]]
    publisher: Publisher
    journal: str
    issn: str
    subjects: list[str]
    oa_status: str
    license: str | None
    urls: list[Url]
    has_jats: bool
    crossref_language: bool
    jats: str | None
    partner: str | None  # DOI of the preprint / journal version (as registered)
    landing_flags: dict[str, bool] = field(default_factory=dict)
    text_rng: random.Random | None = None


_MATHML = (
    ('<mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML"><mml:msub><mml:mi>CO</mml:mi><mml:mn>2</mml:mn>'
     "</mml:msub></mml:math>", "CO2"),
    ('<mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML"><mml:msup><mml:mi>L</mml:mi><mml:mn>2</mml:mn>'
     "</mml:msup></mml:math>", "L2"),
    ('<mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML"><mml:mi>p</mml:mi></mml:math>', "p"),
)
_LICENSES = {
    "cc-by": "http://creativecommons.org/licenses/by/4.0/",
    "cc-by-nc": "http://creativecommons.org/licenses/by-nc/4.0/",
    "cc-by-nc-nd": "http://creativecommons.org/licenses/by-nc-nd/4.0/",
}


def _status(rng: random.Random) -> int | None:
    u = rng.random()
    return 404 if u < 0.04 else 500 if u < 0.065 else None if u < 0.135 else 200


def _jats(rng: random.Random, abstract_word: str, sentences: list[str], joiner: str) -> str:
    """The abstract as Crossref deposits it: JATS with a title, sometimes structured sections."""
    esc = [s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for s in sentences]
    u = rng.random()
    if u < 0.15 and len(esc) >= 3:
        half = len(esc) // 2
        return (f"<jats:sec><jats:title>Background</jats:title><jats:p>{joiner.join(esc[:half])}</jats:p></jats:sec>"
                f"<jats:sec><jats:title>Results</jats:title><jats:p>{joiner.join(esc[half:])}</jats:p></jats:sec>")
    if u < 0.25:
        return f"<jats:p>{joiner.join(esc)}</jats:p>"
    title = "Abstract" if rng.random() < 0.6 else abstract_word
    return f"<jats:title>{title}</jats:title><jats:p>{joiner.join(esc)}</jats:p>"


def _paper_rngs(plan: Plan, i: int) -> tuple[random.Random, random.Random]:
    """(text RNG, misc RNG). A preprint shares its journal version's text RNG, so both have
    the same title, authors and abstract."""
    text_i = i - 1 if plan.kind[i] == KIND_PREPRINT else i
    base = plan.seed * 33_554_432
    return random.Random((base + text_i) * 2), random.Random((base + i) * 2 + 1)


def build_paper(plan: Plan, i: int) -> Paper:
    """Everything about paper `i`, deterministically from the plan and the seed."""
    text_rng, rng = _paper_rngs(plan, i)
    lang = LANGS[plan.lang[i]]
    bank = BANKS[lang]
    kind = plan.kind[i]
    year, month = plan.year[i], plan.month[i]
    text = make_text(text_rng, lang, year, review=kind == KIND_REVIEW, concept=plan.concept[i])
    authors = make_authors(text_rng, lang)
    sentences = list(text.abstract_sentences)
    if kind == KIND_PREPRINT and len(sentences) > 3 and rng.random() < 0.6:
        sentences = sentences[:-1]  # the journal version added a sentence in revision
    abstract = bank.joiner.join(sentences)
    title = text.title
    crossref_title, has_mathml = title, False
    if lang == "en" and text_rng.random() < 0.03:  # text RNG: a preprint keeps its version's title
        mml, plain = text_rng.choice(_MATHML)
        has_mathml = True
        crossref_title = f"{mml} and {title[:1].lower()}{title[1:]}"
        title = f"{plain} and {title[:1].lower()}{title[1:]}"
    pub = plan.publisher(i)
    concept = plan.concept[i]
    journal = pub.name if kind == KIND_PREPRINT else journal_name(pub, concept)
    subjects = [] if kind == KIND_PREPRINT else list(CONCEPT_SUBJECTS[concept][: 1 + (i % 3)])

    u = rng.random()
    if kind == KIND_PREPRINT:
        oa_status = "green"
    else:
        oa_status = "gold" if u < 0.38 else "hybrid" if u < 0.46 else "bronze" if u < 0.60 else "green" if u < 0.83 else "closed"
    license_ = None if oa_status in ("bronze", "closed") else rng.choice(("cc-by", "cc-by", "cc-by", "cc-by-nc", "cc-by-nc-nd"))
    pdf_ok = lang in PDF_LANGS
    suffix = plan.suffix(i).lower() if rng.random() < 0.7 else plan.suffix(i)
    urls = [Url(pub.landing.format(suffix=suffix), "landing", "publisher", _status(rng))]
    if pdf_ok and oa_status in ("gold", "hybrid", "bronze") and rng.random() < 0.85:
        urls.append(Url(pub.pdf.format(suffix=suffix), "pdf", "publisher", _status(rng)))
    if oa_status == "green" or (oa_status != "closed" and rng.random() < 0.2):
        host, _, _ = REPOSITORIES[_pick(_REPO_CUM, rng.random())]
        handle = f"{10000 + (i * 37) % 90000}/{i}"
        if pdf_ok:
            urls.append(Url(f"https://{host}/bitstream/handle/{handle}/{suffix.replace('/', '_')}.pdf", "pdf", "repository", _status(rng)))
        else:
            urls.append(Url(f"https://{host}/handle/{handle}", "landing", "repository", _status(rng)))
    has_jats = plan.src[i] != SRC_UNPAYWALL_ONLY and rng.random() < (0.45 if lang == "en" else 0.3)
    jats = _jats(rng, bank.words[0], sentences, bank.joiner) if has_jats else None
    partner = None
    if kind == KIND_WITH_PREPRINT:
        partner = plan.doi(i + 1)
    elif kind == KIND_PREPRINT:
        partner = plan.doi(i - 1)
    flags = {
        "html_lang": rng.random() < 0.85, "citation_lang": rng.random() < 0.6,
        "citation_abstract": rng.random() < 0.4, "dc_description": rng.random() < 0.3,
        "og_description": rng.random() < 0.3, "abstract_section": rng.random() < 0.92,
        "fulltext": oa_status != "closed" and rng.random() < 0.7,
    }
    return Paper(
        i=i, doi=plan.doi(i), key=plan.doi_key(i), lang=lang, year=year, month=month, day=plan.day(i),
        kind=kind, src=plan.src[i], title=title, crossref_title=crossref_title, title_has_mathml=has_mathml,
        abstract=abstract, authors=authors, publisher=pub, journal=journal, issn=issn_for(journal),
        subjects=subjects, oa_status=oa_status, license=license_, urls=urls, has_jats=has_jats,
        crossref_language=rng.random() < 0.55, jats=jats, partner=partner, landing_flags=flags, text_rng=text_rng,
    )


def _date(p: Paper) -> str:
    return f"{p.year}-{p.month:02d}-{p.day:02d}"


def unpaywall_record(p: Paper) -> dict[str, Any]:
    """The paper as an Unpaywall snapshot record (data_standard 2)."""
    updated = f"{min(p.year + 2, 2023)}-{p.month:02d}-{p.day:02d}T{p.i % 24:02d}:{p.i % 60:02d}:{(p.i * 7) % 60:02d}.{p.i % 1000000:06d}"
    locations: list[dict[str, Any]] = []
    if p.oa_status != "closed":
        pub_urls = [u for u in p.urls if u.host_type == "publisher"]
        repo_urls = [u for u in p.urls if u.host_type == "repository"]
        if p.oa_status != "green" or p.kind == KIND_PREPRINT:
            landing = pub_urls[0].url
            pdf = next((u.url for u in pub_urls if u.kind == "pdf"), None)
            evidence = {"gold": "oa journal (via doaj)", "hybrid": "open (via page says license)",
                        "bronze": "open (via free pdf)", "green": "oa repository (via page says Accepted Manuscript)"}[p.oa_status]
            locations.append(_location(pdf or landing, pdf, landing, p.license, "publisher", "publishedVersion", evidence, None, p, updated))
        for u in repo_urls:
            pdf = u.url if u.kind == "pdf" else None
            landing = u.url.rsplit("/", 1)[0] if pdf else u.url
            repo = next(name for host, name, _ in REPOSITORIES if f"//{host}/" in u.url)
            locations.append(_location(u.url, pdf, landing, p.license, "repository",
                                       "acceptedVersion" if p.i % 3 else "publishedVersion",
                                       "oa repository (via OAI-PMH doi match)", repo, p, updated))
        if locations:
            locations[0]["is_best"] = True
    best = locations[0] if locations else None
    return {
        "doi": p.key, "year": p.year,
        "genre": "posted-content" if p.kind == KIND_PREPRINT else "journal-article",
        "is_oa": bool(locations), "title": p.crossref_title, "doi_url": f"https://doi.org/{p.key}",
        "updated": updated, "oa_status": p.oa_status if locations else "closed",
        "publisher": p.publisher.name,
        "z_authors": [{"given": a["given"], "family": a["family"], "sequence": a["sequence"]} for a in p.authors],
        "is_paratext": False, "journal_name": p.journal, "oa_locations": locations, "data_standard": 2,
        "journal_is_oa": p.oa_status == "gold", "journal_issns": p.issn, "journal_issn_l": p.issn,
        "published_date": _date(p), "best_oa_location": best, "first_oa_location": best,
        "journal_is_in_doaj": p.oa_status == "gold", "has_repository_copy": any(u.host_type == "repository" for u in p.urls),
    }


def _location(url, pdf, landing, license_, host_type, version, evidence, repo, p: Paper, updated: str) -> dict[str, Any]:
    return {
        "url": url, "pmh_id": f"oai:{url.split('/')[2]}:{p.i}" if host_type == "repository" else None,
        "is_best": False, "license": license_, "oa_date": _date(p), "updated": updated, "version": version,
        "evidence": evidence, "host_type": host_type,
        "endpoint_id": hashlib.sha1(url.split("/")[2].encode()).hexdigest()[:19] if host_type == "repository" else None,
        "url_for_pdf": pdf, "url_for_landing_page": landing, "repository_institution": repo,
    }


def _date_parts(p: Paper) -> dict[str, Any]:
    return {"date-parts": [[p.year, p.month, p.day]]}


def crossref_item(p: Paper, cited_by: int, refs_out: int) -> dict[str, Any]:
    """The paper as a Crossref work item of the public data file."""
    minute, second = p.i % 60, (p.i * 13) % 60
    ts = f"{p.year}-{p.month:02d}-{p.day:02d}T08:{minute:02d}:{second:02d}Z"
    stamp = calendar.timegm((p.year, p.month, p.day, 8, minute, second)) * 1000
    prefix = p.publisher.prefix
    item: dict[str, Any] = {
        "indexed": {"date-parts": [[2024, 1, 1 + p.i % 28]], "date-time": "2024-01-01T00:00:00Z", "timestamp": 1704067200000},
        "reference-count": refs_out, "publisher": p.publisher.name,
        "content-domain": {"domain": [], "crossmark-restriction": False},
        "DOI": p.doi, "type": "posted-content" if p.kind == KIND_PREPRINT else "journal-article",
        "created": {"date-parts": [[p.year, p.month, p.day]], "date-time": ts, "timestamp": stamp},
        "source": "Crossref", "is-referenced-by-count": cited_by,
        "title": [p.crossref_title], "prefix": prefix, "member": _MEMBER_IDS.get(p.publisher.prefix, "999"),
        "author": [{"given": a["given"], "family": a["family"], "sequence": a["sequence"], "affiliation": []} for a in p.authors],
        "container-title": [] if p.kind == KIND_PREPRINT else [p.journal],
        "deposited": {"date-parts": [[p.year, p.month, p.day]], "date-time": ts, "timestamp": stamp},
        "score": 1, "resource": {"primary": {"URL": p.urls[0].url}},
        "issued": _date_parts(p), "published": _date_parts(p),
        "references-count": refs_out, "URL": f"https://doi.org/{p.key}",
    }
    if p.kind == KIND_PREPRINT:
        item["posted"] = _date_parts(p)
        item["subtype"] = "preprint"
        item["institution"] = [{"name": p.publisher.name, "acronym": ["EPA"]}]
        item["group-title"] = p.subjects[0] if p.subjects else "Science"
        item["relation"] = {"is-preprint-of": [{"id-type": "doi", "id": p.partner, "asserted-by": "subject"}]}
    else:
        item["published-online"] = _date_parts(p)
        item["volume"] = str(max(1, p.year - 1990))
        item["issue"] = str(1 + p.month // 4)
        item["page"] = f"{1 + p.i % 300}-{12 + p.i % 300}"
        item["short-container-title"] = ["".join(w[0] for w in p.journal.split()).upper()]
        item["ISSN"] = [p.issn]
        item["issn-type"] = [{"value": p.issn, "type": "electronic"}]
        item["subject"] = p.subjects
        if p.partner:
            item["relation"] = {"has-preprint": [{"id-type": "doi", "id": p.partner, "asserted-by": "object"}]}
        elif p.i % 97 == 0:
            item["relation"] = {"is-version-of": [{"id-type": "doi", "id": f"{prefix}/v.{p.i}", "asserted-by": "subject"}]}
    if p.license:
        item["license"] = [{"URL": _LICENSES[p.license], "start": _date_parts(p) | {"date-time": ts, "timestamp": stamp},
                            "delay-in-days": 0, "content-version": "vor"}]
    pdf = next((u.url for u in p.urls if u.kind == "pdf" and u.host_type == "publisher"), None)
    if pdf:
        item["link"] = [
            {"URL": pdf, "content-type": "application/pdf", "content-version": "vor", "intended-application": "text-mining"},
            {"URL": pdf, "content-type": "unspecified", "content-version": "vor", "intended-application": "similarity-checking"},
        ]
    elif p.oa_status == "closed":
        item["link"] = [{"URL": p.urls[0].url, "content-type": "unspecified", "content-version": "vor",
                         "intended-application": "similarity-checking"}]
    if p.jats is not None:
        item["abstract"] = p.jats
    if p.crossref_language:
        item["language"] = p.lang
    return item


def truth_record(p: Paper, cites: CitationResult, hub_threshold: int) -> dict[str, Any]:
    """What the generator knows about a paper, for checking what the pipeline recovers."""
    landing_ok = any(u.kind == "landing" and u.status == 200 for u in p.urls)
    return {
        "doi": p.key, "doi_registered": p.doi, "language": p.lang, "script": BANKS[p.lang].script,
        "title": p.title, "abstract": p.abstract, "year": p.year,
        "type": "posted-content" if p.kind == KIND_PREPRINT else "journal-article",
        "in_unpaywall": p.src != SRC_CROSSREF_ONLY, "in_crossref": p.src != SRC_UNPAYWALL_ONLY,
        "has_jats_abstract": p.has_jats, "title_has_mathml": p.title_has_mathml,
        "crossref_language": p.lang if p.crossref_language and p.src != SRC_UNPAYWALL_ONLY else None,
        "oa_status": p.oa_status, "license": p.license, "journal": p.journal, "publisher": p.publisher.name,
        "subjects": p.subjects,
        "urls": [{"url": u.url, "kind": u.kind, "host_type": u.host_type, "status": u.status} for u in p.urls],
        "has_landing": landing_ok,
        "landing_has_abstract": landing_ok and p.landing_flags["abstract_section"],
        "landing_has_fulltext": landing_ok and p.landing_flags["fulltext"],
        "landing_meta_abstract": landing_ok and any(p.landing_flags[k] for k in ("citation_abstract", "dc_description", "og_description")),
        "has_pdf": any(u.kind == "pdf" and u.status == 200 for u in p.urls),
        "is_review": p.kind == KIND_REVIEW, "is_preprint": p.kind == KIND_PREPRINT,
        "preprint_of": p.partner.lower() if p.kind == KIND_PREPRINT and p.partner else None,
        "has_preprint": p.partner.lower() if p.kind == KIND_WITH_PREPRINT and p.partner else None,
        # the papers of the sample it cites (OpenCitations rows; self-citations, DOIs outside
        # the metadata and repeated rows left out), when the references were kept (WARC samples)
        "cites": sorted({k for k in cites.refs.get(p.i, ()) if k != p.key and not k.startswith(OUTSIDE_PREFIX + "/")})
        if cites.refs else None,
        "in_degree": cites.in_degree[p.i], "n_refs_in_sample": cites.out_in_sample[p.i],
        "n_refs_outside": cites.out_outside[p.i], "self_citation": bool(cites.self_cited[p.i]),
        "is_hub": cites.in_degree[p.i] >= hub_threshold,
    }


# ---------------------------------------------------------------------------------------------
# WARC


def _record_id(seed: int, url: str, rtype: str) -> str:
    h = hashlib.sha1(f"{seed}|{rtype}|{url}".encode()).hexdigest()
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}>"


def _warc_date(k: int) -> str:
    """Fixed crawl dates, a second apart per fetch number `k`, within the 28 days after WARC_DATE."""
    s = k % (86400 * 28)
    return f"{WARC_DATE[:8]}{1 + s // 86400:02d}T{s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}Z"


class WarcSink:
    """Writes request/response pairs with warcio, with ids and dates derived from seed and URL.

    A sink writes one piece of the final WARC (the pages of one chunk of papers); pieces are
    concatenated in chunk order, which is valid because every WARC record is its own gzip member.
    """

    def __init__(self, fileobj: IO[bytes], seed: int) -> None:
        from warcio.warcwriter import WARCWriter

        self._w = WARCWriter(fileobj, gzip=True, warc_version="1.0")
        self._seed = seed
        self.counts = {"warc_records": 0, "warc_200": 0, "warc_404": 0, "warc_500": 0}

    def add_warcinfo(self, filename: str) -> None:
        info = b"software: openmsd-build sample\r\nformat: WARC File Format 1.0\r\n"
        rec = self._w.create_warc_record(
            filename, "warcinfo", payload=io.BytesIO(info), length=len(info),
            warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Record-ID": _record_id(self._seed, filename, "warcinfo"), "WARC-Date": WARC_DATE,
                               "WARC-Filename": filename})
        rec.rec_headers.remove_header("WARC-Target-URI")
        self._w.write_record(rec)
        self.counts["warc_records"] += 1

    def add(self, url: str, status: int, content_type: str, body: bytes, when: int) -> None:
        from warcio.statusandheaders import StatusAndHeaders

        date = _warc_date(when)
        host = url.split("/")[2]
        path = "/" + url.split("/", 3)[3] if url.count("/") >= 3 else "/"
        req_headers = StatusAndHeaders(f"GET {path} HTTP/1.1", [
            ("Host", host), ("User-Agent", "openmsd-build/0.1 (+https://example.org/openmsd)"), ("Accept", "*/*")],
            is_http_request=True)
        req = self._w.create_warc_record(url, "request", payload=io.BytesIO(b""), length=0, http_headers=req_headers,
                                         warc_headers_dict={"WARC-Record-ID": _record_id(self._seed, url, "request"), "WARC-Date": date})
        reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}[status]
        http_headers = StatusAndHeaders(f"{status} {reason}", [
            ("Content-Type", content_type), ("Content-Length", str(len(body))), ("Server", "example-httpd"),
            ("Date", "Fri, 01 Mar 2024 00:00:00 GMT")], protocol="HTTP/1.1")
        resp = self._w.create_warc_record(url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http_headers,
                                          warc_headers_dict={"WARC-Record-ID": _record_id(self._seed, url, "response"), "WARC-Date": date,
                                                             "WARC-Concurrent-To": _record_id(self._seed, url, "request")})
        self._w.write_record(req)
        self._w.write_record(resp)
        self.counts["warc_records"] += 2
        self.counts[f"warc_{status}"] += 1


@dataclass
class Citations:
    """A paper's Crossref `reference` array (None: not deposited) and the DOIs each in-text
    marker group cites (`sample.citing`)."""

    reference: list[dict[str, Any]] | None = None
    groups: list[list[str]] = field(default_factory=list)


def _page_content(p: Paper, refs: list[str], plan: Plan) -> tuple[PageContent, Citations]:
    """Full-text paragraphs and references for a paper's pages (drawn after all metadata),
    with in-text citation markers and the matching Crossref reference list (`sample.citing`,
    drawn from their own RNG after these)."""
    rng = p.text_rng or random.Random(p.i)
    bank = BANKS[p.lang]
    paragraphs = make_paragraphs(rng, p.lang, p.year, rng.randint(4, 8))
    references = []
    printed: list[tuple[str, str, int]] = []
    for k, doi in enumerate(refs[:40] or [f"{OUTSIDE_PREFIX}/ext.{rng.randrange(10**8):08d}" for _ in range(rng.randint(3, 8))]):
        fam = rng.choice(("Smith", "Müller", "Martin", "García", "Rossi", "Wang", "Sato", "Kim", "Ivanov", "Silva"))
        initial = chr(65 + rng.randrange(26))
        year = rng.randint(1990, p.year)
        printed.append((fam, initial, year))
        references.append(f"{k + 1}. {fam} {initial}. et al. ({year}). https://doi.org/{doi}")
    paragraphs, reference, groups = plan_citations(plan.seed, p.i, p.lang, p.year, refs, printed, paragraphs, p.key)
    pdf_url = next((u.url for u in p.urls if u.kind == "pdf"), None)
    return PageContent(
        doi=p.key, lang=p.lang, title=p.title, abstract=p.abstract,
        authors=[f"{a['given']} {a['family']}" for a in p.authors], journal=p.journal, publisher=p.publisher.name,
        year=p.year, date=f"{p.year}/{p.month:02d}/{p.day:02d}", license=p.license, words=bank.words,
        paragraphs=paragraphs, references=references, keywords=[bank.topics[plan.concept[p.i] % len(bank.topics)]],
        pdf_url=pdf_url), Citations(reference, groups)


def _write_pages(sink: WarcSink, p: Paper, content: PageContent) -> None:
    for j, u in enumerate(p.urls):
        when = p.i * 4 + j
        if u.status is None:
            continue
        if u.status != 200:
            sink.add(u.url, u.status, "text/html; charset=utf-8", error_html(u.status, u.url), when)
        elif u.kind == "pdf":
            sink.add(u.url, 200, "application/pdf", paper_pdf(content), when)
        else:
            f = p.landing_flags
            body = landing_html(content, html_lang=f["html_lang"], citation_lang=f["citation_lang"],
                                citation_abstract=f["citation_abstract"], dc_description=f["dc_description"],
                                og_description=f["og_description"], abstract_section=f["abstract_section"],
                                fulltext=f["fulltext"] and u.host_type == "publisher")
            sink.add(u.url, 200, "text/html; charset=utf-8", body, when)


# ---------------------------------------------------------------------------------------------
# Driver


class _GzipText:
    """A deterministic gzip text writer: no file name and mtime 0 in the header."""

    def __init__(self, path: str) -> None:
        self._raw = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="wb", mtime=0, filename="", compresslevel=GZIP_LEVEL)
        self._buf: list[str] = []
        self._size = 0

    def write(self, text: str) -> None:
        self._buf.append(text)
        self._size += len(text)
        if self._size > 1 << 20:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            self._gz.write("".join(self._buf).encode("utf-8"))
            self._buf, self._size = [], 0

    def close(self) -> None:
        self.flush()
        self._gz.close()
        self._raw.close()


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _dumps(obj: Any) -> str:
    return _ENCODER.encode(obj)


@dataclass
class _PaperContext:
    plan: Plan
    cites: CitationResult
    hub_threshold: int
    out: str
    tmp: str
    warc: bool


def _paper_chunk(ctx: _PaperContext, chunk: int) -> dict[str, Any]:
    """Write the records of papers [chunk * PAPER_CHUNK, ...): whole Crossref files, and gzip
    members of the Unpaywall, truth and WARC files that the driver concatenates in order."""
    plan, cites, out = ctx.plan, ctx.cites, ctx.out
    lo, hi = chunk * PAPER_CHUNK, min(plan.n, (chunk + 1) * PAPER_CHUNK)
    counts: dict[str, int] = dict.fromkeys((
        "unpaywall_records", "crossref_records", "crossref_files", "unpaywall_only", "crossref_only", "jats_abstracts",
        "preprints", "reviews", "hubs", "urls", "urls_absent", "pdf_urls", "landing_urls", "crossref_reference_lists"), 0)
    languages: dict[str, int] = {}
    unpaywall = _GzipText(os.path.join(ctx.tmp, f"unpaywall-{chunk:05d}.gz"))
    truth = _GzipText(os.path.join(ctx.tmp, f"truth-{chunk:05d}.gz"))
    warc_fh = open(os.path.join(ctx.tmp, f"warc-{chunk:05d}.gz"), "wb") if ctx.warc else None  # noqa: SIM115
    sink = WarcSink(warc_fh, plan.seed) if warc_fh else None
    crossref: _GzipText | None = None
    in_file = 0
    for i in range(lo, hi):
        if i % CROSSREF_PAPERS_PER_FILE == 0 or crossref is None:
            if crossref is not None:
                crossref.write("]}")
                crossref.close()
            crossref = _GzipText(os.path.join(out, "crossref", f"part-{i // CROSSREF_PAPERS_PER_FILE:05d}.json.gz"))
            crossref.write('{"items":[')
            counts["crossref_files"] += 1
            in_file = 0
        p = build_paper(plan, i)
        page, citations = _page_content(p, cites.refs.get(i, []), plan) if sink is not None else (None, Citations())
        languages[p.lang] = languages.get(p.lang, 0) + 1
        if p.src != SRC_CROSSREF_ONLY:
            unpaywall.write(_dumps(unpaywall_record(p)) + "\n")
            counts["unpaywall_records"] += 1
        else:
            counts["crossref_only"] += 1
        if p.src != SRC_UNPAYWALL_ONLY:
            refs_out = cites.out_in_sample[i] + cites.out_outside[i] + cites.self_cited[i]
            item = crossref_item(p, cites.in_degree[i], refs_out)
            if citations.reference is not None:
                item["reference"] = citations.reference
                counts["crossref_reference_lists"] += 1
            crossref.write(("," if in_file else "") + _dumps(item))
            in_file += 1
            counts["crossref_records"] += 1
        else:
            counts["unpaywall_only"] += 1
        counts["jats_abstracts"] += p.has_jats
        counts["preprints"] += p.kind == KIND_PREPRINT
        counts["reviews"] += p.kind == KIND_REVIEW
        counts["hubs"] += cites.in_degree[i] >= ctx.hub_threshold
        for u in p.urls:
            counts["urls"] += 1
            counts["urls_absent"] += u.status is None
            counts["pdf_urls" if u.kind == "pdf" else "landing_urls"] += 1
        truth.write(_dumps(truth_record(p, cites, ctx.hub_threshold) | {"context_citations": citations.groups}) + "\n")
        if sink is not None and page is not None:
            _write_pages(sink, p, page)
    if crossref is not None:
        crossref.write("]}")
        crossref.close()
    unpaywall.close()
    truth.close()
    if sink is not None and warc_fh is not None:
        warc_fh.close()
        counts.update(sink.counts)
    return {"counts": counts, "languages": languages}


def _concatenate(parts: list[str], target: str, head: bytes = b"") -> None:
    """Join gzip members (or WARC pieces) into one file; a multi-member gzip is valid gzip."""
    with open(target, "wb") as dst:
        dst.write(head)
        for part in parts:
            with open(part, "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 22)
            os.remove(part)


SAMPLE_ENTRIES = ("unpaywall", "crossref", "opencitations", "warc", "manifest.json", "truth.jsonl.gz", ".tmp-sample")
"""What a sample folder holds: replaced whole by the next sample written there."""


def is_sample(folder: str) -> bool:
    """Whether `folder` holds a sample this module wrote: a `manifest.json` of its `FORMAT`
    (a manifest.json of anything else says nothing about the folders beside it)."""
    try:
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError, RecursionError):  # nested past the recursion limit: no manifest of ours
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


def foreign_entries(folder: str) -> list[str]:
    """The entries of `SAMPLE_ENTRIES` in a `folder` that is no sample (`is_sample`) nor one cut
    short (it holds `.tmp-sample`): someone's folders of those names, which writing a sample
    there would replace."""
    if is_sample(folder) or os.path.isdir(os.path.join(folder, ".tmp-sample")):
        # `.tmp-sample` is this module's own working folder: a sample cut short (Ctrl-C, a full
        # disk) after the earlier one was removed, which `sample` refused to write again
        return []
    return [name for name in SAMPLE_ENTRIES if os.path.lexists(os.path.join(folder, name))]


def generate(out: str, papers: int = 2000, seed: int = 7, warc: bool = True, workers: int | None = None) -> dict[str, Any]:
    """Write the whole sample into `out` and return the manifest (also written as manifest.json).

    `workers` (default: CPU count) only changes speed: the files are identical for any value.
    An earlier sample's entries in `out` (`SAMPLE_ENTRIES`) are removed first: a bigger one's
    extra Crossref part would otherwise be read with this one's.
    """
    if papers < 1:
        raise ValueError("papers must be >= 1")
    workers = workers or os.cpu_count() or 1
    held = foreign_entries(out)
    if held:
        raise ValueError(f"{out} is not a sample but holds {', '.join(held)}, which a sample replaces")
    from openmsd_build.core.staging import delete_path

    for name in SAMPLE_ENTRIES:  # an earlier sample's files would be read with this one's
        delete_path(os.path.join(out, name))  # a link is removed, never what it points to
    for sub in ("unpaywall", "crossref", "opencitations") + (("warc",) if warc else ()):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    tmp = os.path.join(out, ".tmp-sample")
    os.makedirs(tmp, exist_ok=True)
    plan = make_plan(papers, seed)
    cites = write_citations(plan, os.path.join(out, "opencitations"), keep_refs=warc, workers=workers)
    degrees = sorted(cites.in_degree)
    hub_threshold = max(10, degrees[int(0.99 * (len(degrees) - 1))] + 1)

    ctx = _PaperContext(plan, cites, hub_threshold, out, tmp, warc)
    chunks = range((papers + PAPER_CHUNK - 1) // PAPER_CHUNK)
    counts: dict[str, Any] = dict(cites.counts)
    languages: dict[str, int] = {}
    for part in _run_chunks(_paper_chunk, ctx, chunks, workers):
        for k, v in part["counts"].items():
            counts[k] = counts.get(k, 0) + v
        for k, v in part["languages"].items():
            languages[k] = languages.get(k, 0) + v
    names = [f"{c:05d}.gz" for c in chunks]
    _concatenate([os.path.join(tmp, "unpaywall-" + n) for n in names],
                 os.path.join(out, "unpaywall", "unpaywall_snapshot.jsonl.gz"))
    _concatenate([os.path.join(tmp, "truth-" + n) for n in names], os.path.join(out, "truth.jsonl.gz"))
    if warc:
        info = io.BytesIO()
        sink = WarcSink(info, seed)
        sink.add_warcinfo("pages-00000.warc.gz")
        _concatenate([os.path.join(tmp, "warc-" + n) for n in names],
                     os.path.join(out, "warc", "pages-00000.warc.gz"), head=info.getvalue())
        counts["warc_records"] += 1
    os.rmdir(tmp)
    counts["languages"] = dict(sorted(languages.items(), key=lambda kv: (-kv[1], kv[0])))
    counts["hub_threshold"] = hub_threshold
    inputs = {"unpaywall": "unpaywall/*.jsonl.gz", "crossref": "crossref/*.json.gz", "opencitations": "opencitations/*.csv"}
    if warc:
        inputs["warc"] = "warc/*.warc.gz"
    manifest = {"format": FORMAT, "papers": papers, "seed": seed, "inputs": inputs,
                "truth": "truth.jsonl.gz", "counts": counts}
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=True, ensure_ascii=False)
        fh.write("\n")
    return manifest
