"""`openmsd-build enrich`: English summaries for non-English papers (optional, after `text`).

The OpenMSD paper's best model reads every non-English paper as
`Title: {title}. Abstract: ({English summary}) {abstract}` (`text.enriched_text`), the
summary being either the English translation of the abstract's first N tokens (N = 64 or
128; `--summarizer translate` or `ctranslate2`) or a generative model's answer to one of
two prompts (`--summarizer chat --prompt summary30|findings3`), cut to N tokens
(`core.textclean.count_tokens`, the documents' rule). English papers are not enriched.

Reads `OUT/documents/`; writes `OUT/enriched/` (schema ENRICHED, zstd Parquet, one part per
`--part-rows` documents read, sorted by DOI), `OUT/rejects/enrich/` and
`OUT/_stats/enrich.json`, swapped in atomically (`core.staging`). Answers are cached in
`OUT/_cache/enrich.sqlite` (`cache`), outside the swapped folders, so a failed run's paid
answers survive and a re-run asks the endpoint for nothing it already has.

Why a thread pool and not Beam: the work is waiting on one endpoint (I/O bound, a few
requests per second to a few hundred), and what must be bounded is the concurrency and the
request rate *against that endpoint*, globally. A Beam job would multiply both by its
workers (and re-send requests on bundle retries, which the local cache cannot see across
machines). So the stage runs in one process: `--concurrency` worker threads, one shared
token-bucket `--rate` limit, batches of `--batch-size` documents. Reading documents and
writing Parquet is streamed part by part, so memory stays bounded by `--part-rows`.

Checks on every answer, fresh or cached (`check_answer`): an explicit or textual refusal
(`refusal`), nothing left after cleaning (`empty_output`), an answer that repeats the prompt's
wording (`echoed_prompt`), a summary CLD3 does not call English (`non_english_output`, via
`core.language.detect_language`). Transport failures
(`timeout`, `server_error`, `rate_limited`, `connection_error`, `endpoint_rejected`,
`malformed_response`) are rejects after bounded retries (`summarizers`). `no_text`: a
document with nothing to send (no abstract for translation; neither title nor abstract).

Counts (`_stats/enrich.json`) reconcile:
    documents_read = english_skipped + non_english
    non_english    = enriched + rejected + not_summarized     (not_summarized: --summarizer none)
    rejected       = sum of rejected_<reason>
    cache_hits + cache_misses = non_english - not_summarized - rejected_no_text
                              (the documents with text to send, each looked up in the cache once)
    usage_prompt_tokens     = usage_prompt_tokens_kept + usage_prompt_tokens_rejected
    usage_completion_tokens = usage_completion_tokens_kept + usage_completion_tokens_rejected
plus `requests` and `retries` (HTTP calls made), `input_tokens` / `output_tokens` (our token
rule, over every document sent / answered, cached or not: the basis of the README's cost
estimate) and `usage_*` (what the endpoint reported for each answer, cached ones included):
`_kept` for the answers that became summaries, `_rejected` for the answers the checks refused
(a refusal, an empty, echoed or non-English answer: paid for, but no summary). A transport
failure reports no usage. The summary line shows both shares.

The cache hit rate is over the documents with text to send, whatever the summarizer: a
document with nothing to send (`no_text`) is never looked up, and translation sends only the
abstract where chat sends title and abstract, so on one build translate can look up fewer
documents than chat (761 and 764 of the demo's 764 non-English); the summary line names that
denominator rather than leaving the two bare fractions to look like different counts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout, progress
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least, number_from
from openmsd_build.core.parquet_io import (
    check_parts,
    footer_rows,
    join_path,
    list_parts,
    table_from_rows,
    unreadable,
    write_table,
)
from openmsd_build.core.paths import inside
from openmsd_build.core.rejects import make_reject
from openmsd_build.core.staging import owned_paths, path_exists, stage_outputs
from openmsd_build.enrich import FOLDER, STAGE, enriched_dir, text_fingerprint
from openmsd_build.enrich.cache import CACHE_FILE, AnswerCache, CachedAnswer, cache_key
from openmsd_build.enrich.prompts import DEFAULT_PROMPT, PROMPTS, prompt
from openmsd_build.enrich.summarizers import (
    KINDS,
    ChatSummarizer,
    CTranslate2Summarizer,
    Doc,
    Http,
    NoneSummarizer,
    RateLimiter,
    Reply,
    RetryPolicy,
    Summarizer,
    TranslateSummarizer,
)
from openmsd_build.enrich.text import (
    PAPER_TOKEN_CUTS,
    clean_summary,
    count_tokens,
    enriched_text,
    text_sha1,
    truncate_tokens,
)
from openmsd_build.schemas.tables import DOCUMENTS, ENRICHED, REJECTS

log = logging.getLogger(__name__)

DEFAULT_PART_ROWS = 50_000
STUB_MODEL = "stub-model"
DEMO_FAULT_RATE = 0.04
# Openings of a model declining instead of summarizing (checked on the cleaned answer).
_REFUSAL = re.compile(
    r"^\W*(?:i'?m sorry|i am sorry|sorry,|i cannot|i can'?t|i can not|i'?m unable|i am unable|as an ai\b|"
    r"i'?m not able|i am not able|unfortunately,? i)",
    re.I,
)


def cache_path(out: str, cache_dir: str | None) -> str:
    """The SQLite file; a remote OUT needs a local `--cache-dir`. A cache in a path the stage
    replaces (`OUT/enriched/`, its rejects, its stats) is refused: the swap would delete it with
    the old outputs, and every run would ask the endpoint again for every paper."""
    if cache_dir:
        for owned in owned_paths(STAGE, (FOLDER,)):
            if inside(join_path(out, owned), cache_dir):
                raise UserError(f"--cache-dir {cache_dir} is inside {join_path(out, owned)}, which every enrich run "
                                "replaces (the cache would be deleted with the old outputs): put it elsewhere, "
                                "e.g. OUT/_cache (the default)")
        return os.path.join(cache_dir, CACHE_FILE)
    if "://" in out and not out.startswith("file://"):
        raise UserError(f"--out {out} is not a local folder: pass --cache-dir LOCAL_DIR for the answer cache")
    return os.path.join(out.removeprefix("file://"), "_cache", CACHE_FILE)


def check_answer(reply: Reply, max_tokens: int) -> tuple[str | None, str | None, str | None]:
    """(summary, reject reason, detail) for an endpoint's answer (see the module docstring)."""
    from openmsd_build.core.language import detect_language

    if reply.refusal:
        return None, "refusal", f"the endpoint refused: {reply.refusal[:200]}"
    cleaned = clean_summary(reply.answer)
    if not cleaned or count_tokens(cleaned) == 0:
        return None, "empty_output", "the answer is empty after cleaning"
    if _REFUSAL.match(cleaned):
        return None, "refusal", f"the answer reads as a refusal: {cleaned[:200]}"
    echoed = _echoed_prompt(cleaned)
    if echoed:
        return None, "echoed_prompt", f"the answer repeats the prompt: {echoed[:80]!r}"
    summary = truncate_tokens(cleaned, max_tokens)
    language, prob, _ = detect_language(summary)
    if language != "en":
        return None, "non_english_output", f"CLD3 says {language} (p={prob:.2f}), not en"
    return summary, None, None


def _echoed_prompt(answer: str) -> str | None:
    """The prompt's wording (its whole system message or a whole instruction) when `answer`
    repeats it, else None: a server that returns its input is no summarizer, and the English
    prompt made CLD3 call such an answer English. Only the whole of it counts: a model's
    preamble ("Here are the three most important findings of the following scientific paper,
    translated into English: ...") borrows its words, and the title and abstract are not looked
    for (a summary may quote an abstract's English part)."""
    from openmsd_build.enrich.prompts import PROMPTS, SYSTEM

    flat = " ".join(answer.split())
    return next((text for text in (SYSTEM, *(p.instruction for p in PROMPTS.values())) if text in flat), None)


# --------------------------------------------------------------------------- reading


_COLUMNS = ["doi", "language", "title", "abstract"]


def documents_parts(out: str) -> list[str]:
    """The documents' part files, checked: a truncated or foreign part (or a column of another
    type) is one line naming it, before any answer is paid for or any footer counted, not
    Arrow's traceback part-way through the run."""
    parts = list_parts(layout.documents_dir(out))
    if not parts:
        raise UserError(f"{layout.documents_dir(out)}: no Parquet files (run the text stage first)")
    check_parts(parts, DOCUMENTS, _COLUMNS, required=("doi",))
    return parts


def iter_documents(parts: list[str], part_rows: int) -> Iterator[list[Doc]]:
    """The documents of `parts` (`documents_parts`) in chunks of at most `part_rows`, file by
    file (bounded memory)."""
    chunk: list[Doc] = []
    columns = _COLUMNS
    for path in parts:
        for batch in _batches(path, columns):
            data = batch.to_pydict()
            n = batch.num_rows
            get = {c: data.get(c, [None] * n) for c in columns}
            for i in range(n):
                chunk.append(Doc(get["doi"][i], get["language"][i], get["title"][i], get["abstract"][i]))
                if len(chunk) >= part_rows:
                    yield chunk
                    chunk = []
    if chunk:
        yield chunk


def _batches(path: str, columns: list[str]) -> Iterator:
    """The record batches of one documents part (those of `columns` it has); a data page that
    does not read is a `UserError` naming the file (`parquet_io.unreadable`)."""
    try:
        with FileSystems.open(path) as f:
            pf = pq.ParquetFile(io.BytesIO(f.read()))
        present = [c for c in columns if c in pf.schema_arrow.names]
        yield from pf.iter_batches(batch_size=10_000, columns=present)
    except (pa.ArrowException, OSError) as exc:
        raise unreadable(path, exc) from None


# --------------------------------------------------------------------------- the stage


OUTCOMES = ("english_skipped", "enriched", "rejected", "not_summarized")  # one per document read


class Enricher:
    """Runs one summarizer over document chunks with the cache, a thread pool and counts."""

    def __init__(self, summarizer: Summarizer, cache: AnswerCache | None, max_tokens: int, concurrency: int):
        self.s = summarizer
        self.cache = cache
        self.max_tokens = max_tokens
        self.concurrency = max(1, concurrency)
        self.counts: Counter = Counter()
        self.rejects: list[dict] = []

    def _reject(self, doc: Doc, reason: str, detail: str | None, raw: str | None = None) -> None:
        self.counts["rejected"] += 1
        self.counts[f"rejected_{reason}"] += 1
        self.rejects.append(make_reject(STAGE, reason, key=doc.doi, detail=detail, source=self.s.endpoint or self.s.kind,
                                        raw=raw))

    def _usage(self, reply: Reply, outcome: str) -> None:
        """The endpoint's usage of one answer, in the total and in its `outcome`'s share
        (`kept`: it became a summary; `rejected`: the answer's checks refused it)."""
        for part, n in (("prompt", reply.usage_prompt_tokens or 0), ("completion", reply.usage_completion_tokens or 0)):
            self.counts[f"usage_{part}_tokens"] += n
            self.counts[f"usage_{part}_tokens_{outcome}"] += n

    def _accept(self, doc: Doc, text: str, reply: Reply) -> dict | None:
        self.counts["output_tokens"] += count_tokens(reply.answer)
        summary, reason, detail = check_answer(reply, self.max_tokens)
        if summary is None:
            self._usage(reply, "rejected")
            self._reject(doc, reason or "invalid", detail, raw=reply.answer or reply.refusal)
            return None
        self._usage(reply, "kept")
        n = count_tokens(summary)
        self.counts["enriched"] += 1
        self.counts["summary_tokens"] += n
        return {
            "doi": doc.doi, "language": doc.language, "summary": summary, "summarizer": self.s.kind,
            "prompt_id": self.s.prompt_id, "model_id": self.s.model_id, "n_tokens": n,
            "max_tokens": self.max_tokens, "text": enriched_text(doc.title, doc.abstract, summary),
            "source_sha1": text_sha1(text),
        }

    def _call(self, batch: list[tuple[Doc, str, str]]) -> list[Reply]:
        """One batch in a worker thread; fresh answers go to the cache at once."""
        replies = self.s.summarize_batch([d for d, _, _ in batch], [t for _, t, _ in batch])
        if self.cache is not None:
            for (doc, text, key), r in zip(batch, replies, strict=True):
                if r.reason is None:
                    self.cache.put(key, doi=doc.doi, text_sha1=text_sha1(text), summarizer=self.s.kind,
                                   prompt_id=self.s.prompt_id, model_id=self.s.model_id,
                                   answer=CachedAnswer(r.answer or "", r.refusal, r.usage_prompt_tokens,
                                                       r.usage_completion_tokens))
        return replies

    def _report(self, seen: dict[str, int]) -> None:
        """The documents finished since `seen` to the progress line (`core.progress`): a run
        against a real endpoint takes hours, and its summary comes only at the end."""
        progress.add(STAGE, {k: self.counts[k] - seen.get(k, 0) for k in OUTCOMES})
        seen.update({k: self.counts[k] for k in OUTCOMES})

    def process(self, docs: list[Doc], pool: ThreadPoolExecutor | None) -> list[dict]:
        rows: list[dict] = []
        pending: list[tuple[Doc, str, str]] = []
        seen = {k: self.counts[k] for k in OUTCOMES}
        for doc in docs:
            self.counts["documents_read"] += 1
            if doc.language == "en":
                self.counts["english_skipped"] += 1
                continue
            self.counts["non_english"] += 1
            if isinstance(self.s, NoneSummarizer):
                self.counts["not_summarized"] += 1
                continue
            text = self.s.input_text(doc)
            if not text:
                self._reject(doc, "no_text", f"nothing to send to {self.s.kind} (no abstract/title)")
                continue
            self.counts["input_tokens"] += count_tokens(text) + self.s.fixed_input_tokens
            key = cache_key(doc.doi, text_sha1(text), self.s.kind, self.s.prompt_id, self.s.model_id)
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                self.counts["cache_hits"] += 1
                reply = Reply(answer=hit.answer, refusal=hit.refusal, usage_prompt_tokens=hit.usage_prompt_tokens,
                              usage_completion_tokens=hit.usage_completion_tokens)
                if (row := self._accept(doc, text, reply)) is not None:
                    rows.append(row)
                continue
            self.counts["cache_misses"] += 1
            pending.append((doc, text, key))
        self._report(seen)  # English, cached and unsendable documents: done without a request
        # same-language neighbours share a translation request
        pending.sort(key=lambda p: (p[0].language or "", p[0].doi or ""))
        size = max(1, self.s.batch_size)
        batches = [pending[i : i + size] for i in range(0, len(pending), size)]
        results = pool.map(self._call, batches) if pool is not None else map(self._call, batches)
        for batch, replies in zip(batches, results, strict=True):
            for (doc, text, _), reply in zip(batch, replies, strict=True):
                self.counts["requests"] += reply.requests
                self.counts["retries"] += reply.retries
                if reply.reason is not None:
                    self._reject(doc, reply.reason, reply.detail, raw=reply.raw)
                elif (row := self._accept(doc, text, reply)) is not None:
                    rows.append(row)
            self._report(seen)
        return sorted(rows, key=lambda r: r["doi"] or "")


def run_enrich(
    out: str,
    summarizer: Summarizer,
    max_tokens: int = 64,
    cache_dir: str | None = None,
    concurrency: int = 8,
    part_rows: int = DEFAULT_PART_ROWS,
    extra_stats: dict | None = None,
) -> dict:
    """Run the stage; returns the stats document (also `_stats/enrich.json`). `max_tokens`
    and `part_rows` are checked here for callers from Python; the command refuses
    `--n-tokens` and `--part-rows` when parsing its flags."""
    started = time.time()
    if max_tokens < 1 or part_rows < 1:
        raise UserError("--n-tokens and --part-rows must be at least 1")
    cache = None if isinstance(summarizer, NoneSummarizer) else AnswerCache(cache_path(out, cache_dir))
    enricher = Enricher(summarizer, cache, max_tokens, concurrency)
    # ctranslate2 is local and parallel inside a batch: no thread pool in front of it
    threads = 0 if isinstance(summarizer, (NoneSummarizer, CTranslate2Summarizer)) else enricher.concurrency
    try:
        with stage_outputs(out, STAGE, folders=(FOLDER,)) as dest, (
            ThreadPoolExecutor(threads, thread_name_prefix="enrich") if threads else contextlib.nullcontext()
        ) as pool:
            written = 0
            parts = documents_parts(out)
            progress.add(STAGE, {"documents_planned": footer_rows(parts)})
            for part, docs in enumerate(iter_documents(parts, part_rows)):
                rows = enricher.process(docs, pool)
                written += write_table(table_from_rows(rows, ENRICHED),
                                       join_path(enriched_dir(dest), f"part-{part:05d}.parquet"))
                log.info("enrich: part %d, %s", part, dict(enricher.counts))
            if written == 0:  # always a readable folder, so `--text enriched` can tell "ran, none"
                write_table(ENRICHED.empty_table(), join_path(enriched_dir(dest), "part-00000.parquet"))
            if enricher.rejects:
                rejects = sorted(enricher.rejects, key=lambda r: (r["reason"], r["key"] or ""))
                write_table(table_from_rows(rejects, REJECTS),
                            join_path(layout.rejects_dir(dest, STAGE), "part-00000-of-00001.parquet"))
            stats = stats_document(enricher.counts, summarizer, max_tokens, cache, started, extra_stats)
            refuse_emptying(out, stats["counts"])
            stats["built_from"] = text_fingerprint(out)  # `enrich.check_current` compares it later
            path = layout.stats_path(dest, STAGE)
            if "://" not in path:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            with FileSystems.create(path) as f:
                f.write(json.dumps(stats, indent=2, sort_keys=True).encode("utf-8"))
    finally:
        if cache is not None:
            cache.close()
    return stats


CHECKED_REJECTS = ("refusal", "empty_output", "echoed_prompt", "non_english_output")
"""Reject reasons of an answer that came back and failed `check_answer` (its usage is paid)."""

COUNTERS = ("documents_read", "english_skipped", "non_english", "enriched", "rejected", "not_summarized",
            "cache_hits", "cache_misses", "requests", "retries", "input_tokens", "output_tokens", "summary_tokens",
            "usage_prompt_tokens", "usage_completion_tokens", "usage_prompt_tokens_kept",
            "usage_completion_tokens_kept", "usage_prompt_tokens_rejected", "usage_completion_tokens_rejected")


def stats_document(counts: Counter, s: Summarizer, max_tokens: int, cache: AnswerCache | None, started: float,
                   extra: dict | None) -> dict:
    c = {k: int(counts.get(k, 0)) for k in COUNTERS}
    c.update({k: int(v) for k, v in counts.items() if k.startswith("rejected_")})
    lookups = c["cache_hits"] + c["cache_misses"]
    answered = c["enriched"] + sum(c.get(f"rejected_{r}", 0) for r in CHECKED_REJECTS)
    return {
        "stage": STAGE,
        "counts": dict(sorted(c.items())),
        **s.describe(),
        "max_tokens": max_tokens,
        "cache": cache.path if cache is not None else None,
        "cache_hit_rate": round(c["cache_hits"] / lookups, 4) if lookups else None,
        "per_document": {
            "input_tokens": round(c["input_tokens"] / lookups, 1) if lookups else None,
            "output_tokens": round(c["output_tokens"] / answered, 1) if answered else None,
        },
        "token_rule": "openmsd_build.core.textclean.count_tokens (\\w+ runs; each CJK character one token)",
        "seconds": round(time.time() - started, 3),
        **(extra or {}),
    }


def nothing_summarized(counts: dict, rejects_kept: bool = True) -> str | None:
    """A warning when documents were sent (or read from the cache) and none came back as a
    summary: an endpoint down, a wrong model or URL, every answer refused (None otherwise).
    `rejects_kept`: the run's rejects are written (not when the run is refused: its staged
    rejects go with it, and rejects/enrich/ still holds the earlier run's)."""
    asked = counts.get("non_english", 0) - counts.get("not_summarized", 0)
    if not asked or counts.get("enriched", 0):
        return None
    reasons = ", ".join(f"{k.removeprefix('rejected_')} {v:,}" for k, v in sorted(counts.items())
                        if k.startswith("rejected_") and v)
    return (f"enrich summarized none of the {asked:,} non-English documents ({reasons}): is the endpoint up, and "
            "are --endpoint and --model right?" + (" See rejects/enrich/" if rejects_kept else ""))


def refuse_emptying(out: str, counts: dict) -> None:
    """`core.stats.refuse_emptying` for enriched/, when this run summarized nothing: an
    endpoint that is down for a while must not replace the answers of an earlier run with none
    (its answers are cached; a later run asks again), nor must a run that forgot its
    `--summarizer` (the default, none, summarizes nothing)."""
    from openmsd_build.core import stats

    why = nothing_summarized(counts, rejects_kept=False)
    if why is None and counts.get("not_summarized", 0) and not counts.get("enriched", 0):
        why = f"--summarizer none, the default, summarizes none of the {counts['not_summarized']:,} non-English documents"
    if why is not None:
        stats.refuse_emptying(STAGE, enriched_dir(out), 0, "summaries", f" ({why})")


def check_counts(counts: dict) -> list[str]:
    """The reconciliation identities of the module docstring; [] when they all hold."""
    c = counts
    problems = []
    if c.get("documents_read", 0) != c.get("english_skipped", 0) + c.get("non_english", 0):
        problems.append("documents_read != english_skipped + non_english")
    if c.get("non_english", 0) != c.get("enriched", 0) + c.get("rejected", 0) + c.get("not_summarized", 0):
        problems.append("non_english != enriched + rejected + not_summarized")
    if c.get("rejected", 0) != sum(v for k, v in c.items() if k.startswith("rejected_")):
        problems.append("rejected != sum of rejected_<reason>")
    if c.get("cache_hits", 0) + c.get("cache_misses", 0) != (
            c.get("non_english", 0) - c.get("not_summarized", 0) - c.get("rejected_no_text", 0)):
        problems.append("cache_hits + cache_misses != non_english - not_summarized - rejected_no_text")
    for part in ("prompt", "completion"):
        total = f"usage_{part}_tokens"
        if c.get(total, 0) != c.get(f"{total}_kept", 0) + c.get(f"{total}_rejected", 0):
            problems.append(f"{total} != {total}_kept + {total}_rejected")
    return problems


def usage_text(c: dict) -> str:
    """The endpoint's reported usage, a second line of the summary: kept and rejected answers
    apart (both are paid for), and their total as in `_stats`; "" when the endpoint reported
    none (a translation server)."""
    if not (c.get("usage_prompt_tokens") or c.get("usage_completion_tokens")):
        return ""

    def pair(suffix: str) -> str:
        return f"{c.get(f'usage_prompt_tokens{suffix}', 0):,} + {c.get(f'usage_completion_tokens{suffix}', 0):,}"

    answered = c.get("enriched", 0) + sum(c.get(f"rejected_{r}", 0) for r in CHECKED_REJECTS)
    cached = "; cached answers included (paid when first asked)" if c.get("cache_hits") else ""
    return (f"\n  endpoint usage, prompt + completion tokens: {pair('_kept')} for the {c.get('enriched', 0):,} "
            f"answers kept, {pair('_rejected')} for the {answered - c.get('enriched', 0):,} rejected by the checks; "
            f"total {pair('')}{cached}")


def summary_line(stats: dict) -> str:
    c = stats["counts"]
    reasons = ", ".join(f"{k.removeprefix('rejected_')} {v}" for k, v in sorted(c.items())
                        if k.startswith("rejected_") and v)
    rate = stats.get("cache_hit_rate")
    return (
        f"enrich ({stats['summarizer']}, {stats.get('model_id') or '-'}, {stats.get('prompt_id') or '-'}, "
        f"{stats['max_tokens']} tokens): {c['documents_read']} documents, {c['english_skipped']} English skipped; "
        f"{c['non_english']} non-English = {c['enriched']} enriched + {c['rejected']} rejected"
        + (f" ({reasons})" if reasons else "")
        + (f" + {c['not_summarized']} not summarized" if c["not_summarized"] else "")
        + (f"; cache hits {c['cache_hits']}/{c['cache_hits'] + c['cache_misses']} documents with text to send "
           f"({rate:.0%})" if rate is not None else "")
        + f"; {c['requests']} requests, {c['retries']} retries"
        + (f"; tokens/document in {pd['input_tokens']} out {pd['output_tokens']} (count_tokens rule)"
           if (pd := stats.get("per_document") or {}).get("input_tokens") is not None else "")
        + usage_text(c)
    )


# --------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="the build's output root (reads documents/, writes enriched/)")
    parser.add_argument("--summarizer", choices=KINDS, default="none",
                        help="chat (OpenAI-compatible), translate (LibreTranslate-style), ctranslate2 (local model "
                        "folder) or none (default: no enrichment)")
    parser.add_argument("--endpoint", help="base URL: chat e.g. http://localhost:8000/v1 (vLLM), "
                        "http://localhost:11434/v1 (Ollama); translate e.g. http://localhost:5000")
    parser.add_argument("--model", help="model name sent to the chat endpoint (required for chat); "
                        "a label for translate")
    parser.add_argument("--prompt", choices=sorted(PROMPTS), default=DEFAULT_PROMPT,
                        help="chat prompt: summary30 (<=30-word English summary) or findings3 (three findings "
                        "in English); default summary30")
    # numbers checked when parsed, as every command's: out of range, one usage line naming the
    # flag before anything is read (--n-tokens 0 was refused after the demo stub had started,
    # --concurrency and --retries only for an endpoint, --max-retry-wait -1 not at all: the
    # first retry's sleep raised ValueError)
    parser.add_argument("--n-tokens", type=at_least(1), default=64,
                        help=f"summary length cut, and the abstract tokens translated (paper: {PAPER_TOKEN_CUTS}; "
                        "1 or more, default 64)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="environment variable holding the endpoint's API key, if any (default OPENAI_API_KEY)")
    parser.add_argument("--ct2-model", help="CTranslate2 model folder (with --summarizer ctranslate2)")
    parser.add_argument("--ct2-source-prefix", default="", help="source language token format, e.g. '__{lang}__'")
    parser.add_argument("--ct2-target-prefix", default="", help="target language token, e.g. __en__ or eng_Latn")
    parser.add_argument("--concurrency", type=at_least(1), default=8,
                        help="requests in flight at once (1 or more, default 8)")
    parser.add_argument("--rate", type=number_from(0), default=0.0, help="max requests per second, 0 = unlimited (default)")
    parser.add_argument("--batch-size", type=at_least(1), default=None,
                        help="documents per work unit / translation request (default chat 8, translate 16)")
    parser.add_argument("--timeout", type=number_from(0, inclusive=False), default=60.0, help="seconds per request (default 60)")
    parser.add_argument("--retries", type=at_least(0), default=3,
                        help="retries of a transient failure (0 or more, default 3)")
    parser.add_argument("--max-retry-wait", type=number_from(0), default=30.0,
                        help="longest Retry-After / backoff waited for, seconds (0 or more, default 30)")
    parser.add_argument("--cache-dir", help="folder of the answer cache (default OUT/_cache; needed for gs:// OUT)")
    parser.add_argument("--part-rows", type=at_least(1), default=DEFAULT_PART_ROWS,
                        help=f"documents per output part (1 or more, default {DEFAULT_PART_ROWS:,})")
    parser.add_argument("--demo-stub", action="store_true",
                        help="DEMO ONLY: start the local stub server (deterministic '[stub]' answers, not a model) "
                        "and enrich against it (default summarizer chat)")


def make_summarizer(args: argparse.Namespace, endpoint: str | None = None) -> Summarizer:
    kind = args.summarizer
    endpoint = endpoint or args.endpoint
    if kind == "none":
        return NoneSummarizer()
    if kind == "ctranslate2":
        if not args.ct2_model:
            raise UserError("--summarizer ctranslate2 needs --ct2-model DIR (a converted model; nothing is downloaded)")
        return CTranslate2Summarizer(args.ct2_model, args.n_tokens, args.ct2_source_prefix, args.ct2_target_prefix,
                                     batch_size=args.batch_size or 16)
    if not endpoint:
        raise UserError(f"--summarizer {kind} needs --endpoint URL")
    if not endpoint.startswith(("http://", "https://")):
        raise UserError(f"--endpoint {endpoint}: not an http(s) URL")
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    headers = {"Authorization": f"Bearer {key}"} if key and kind == "chat" else {}
    http = Http(args.timeout, args.concurrency, headers)
    policy = RetryPolicy(retries=args.retries, max_wait=args.max_retry_wait)
    limiter = RateLimiter(args.rate, burst=args.concurrency)
    if kind == "chat":
        if not args.model:
            raise UserError("--summarizer chat needs --model NAME (what the server serves, e.g. "
                            "Qwen/Qwen2.5-7B-Instruct for vLLM, qwen2.5:7b for Ollama)")
        return ChatSummarizer(endpoint, args.model, prompt(args.prompt), http, policy, limiter,
                              batch_size=args.batch_size or 8)
    return TranslateSummarizer(endpoint, args.n_tokens, http, policy, limiter, model=args.model, api_key=key,
                               batch_size=args.batch_size or 16)


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    if beam_args:
        raise UserError(f"enrich runs no Beam pipeline; unknown options: {' '.join(beam_args)}")
    if not path_exists(args.out):  # a gs:// folder is no object: any object under it
        raise UserError(f"output root not found: {args.out}")
    stub = None
    extra: dict = {}
    if args.demo_stub:
        from openmsd_build.enrich.stub import StubServer

        if args.summarizer == "none":
            args.summarizer = "chat"
        if args.summarizer not in ("chat", "translate"):
            raise UserError("--demo-stub serves chat and translate only")
        # the stub's answers are cached under a model id of their own: a later run against a real
        # endpoint with the same --model must not take the placeholders for that model's answers
        args.model = f"{STUB_MODEL}:{args.model}" if args.model else STUB_MODEL
        stub = StubServer(fault_rate=DEMO_FAULT_RATE).start()
        print(f"enrich: DEMO against a local STUB server at {stub.url}: answers are deterministic '[stub]' "
              f"placeholders (about {DEMO_FAULT_RATE:.0%} deliberately bad, to show rejects), not a model's",
              file=sys.stderr)
        extra = {"stub": True, "note": "demo: enriched against the local stub server; summaries are placeholders"}
    try:
        summarizer = make_summarizer(args, stub.url if stub else None)
        with progress.reporting(STAGE):
            stats = run_enrich(args.out, summarizer, args.n_tokens, args.cache_dir, args.concurrency,
                               args.part_rows, extra)
    finally:
        if stub is not None:
            stub.stop()
    print(summary_line(stats))
    if (why := nothing_summarized(stats["counts"])) is not None:
        print(f"warning: {why}", file=sys.stderr)
    problems = check_counts(stats["counts"])
    if problems:
        print("enrich: counts do not reconcile: " + "; ".join(problems), file=sys.stderr)
        return 1
    return 0
