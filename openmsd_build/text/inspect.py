"""`openmsd-build inspect PATH_OR_URL [--json]`: what the text stage makes of one document.

For debugging extraction rules on a single landing page or PDF without running a pipeline:
the document is read from disk or fetched once, sniffed as PDF or HTML by its bytes (servers
mislabel content types), extracted in the same isolated worker the text stage uses (so a
hang or crash here behaves as it would in a build), and the language is detected the same
way. The output names the rule behind every field. With `--title`, the stage's
`title_match` is shown with its verdict against the stage's cut (`title_verdict`): a score
under it is no near match (unrelated titles score up to about 0.45 on shared letter pairs).

(Named `inspect.py` as the CLI registry expects; it is only ever imported as
`openmsd_build.text.inspect`, so it does not shadow the standard library module.)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least, number_from
from openmsd_build.text.documents import TITLE_MATCH_MIN, build_document, extraction_title_match, metadata_titles
from openmsd_build.text.extract.pool import ExtractorPool
from openmsd_build.text.fetch.config import FetchConfig
from openmsd_build.text.fetch.http import HttpFetcher
from openmsd_build.text.fetch.local_files import media_type
from openmsd_build.text.fetch.result import MAX_BODY_BYTES, document_kind

UNSUPPORTED = "unsupported_content"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="PATH_OR_URL", help="a local HTML / PDF file or an http(s) URL")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    parser.add_argument("--url", default=None, help="page URL for a local file (to absolutize the PDF link)")
    parser.add_argument("--timeout", type=number_from(0, inclusive=False), default=30.0, help="extraction time limit in seconds (default 30)")
    parser.add_argument(
        "--max-bytes", type=at_least(1), default=MAX_BODY_BYTES,
        help=f"largest document accepted (1 or more, default {MAX_BODY_BYTES}: the text stage's cap on any body)"
    )
    # the evidence the text stage has for a fetched document: its paper's DOI and metadata title
    parser.add_argument("--doi", default=None, help="the paper's DOI (recorded in the output)")
    parser.add_argument("--title", default=None,
                        help="the paper's metadata title: kept as the title, as the stage does, and checked "
                             f"against the document (title_match, a match at {TITLE_MATCH_MIN} or over; a document "
                             "that is another text gives no text)")
    parser.add_argument("--max-chars", type=at_least(1), default=600,
                        help="summary only: characters shown per field (1 or more, default 600)")
    # The text stage's fetch policy, with the same flags and defaults.
    parser.add_argument("--allow-network", action="extend", nargs="+", default=[], metavar="CIDR",
                        help="allow fetching from this private/loopback network (as `text --allow-network`)")
    parser.add_argument("--no-robots", action="store_true", help="do not honour robots.txt (only for your own servers)")
    parser.add_argument("--contact", default=None, help="contact address added to the User-Agent (e.g. mailto:...)")


UNRELATED_TITLES_SCORE = 0.45
"""About the most two unrelated titles score on `title_similarity` (bigram Dice): of 5,000
random pairs of the real Crossref sample's titles (ASCII, over 20 characters), the median
scored 0.20, one in ten over 0.33, one in a hundred over 0.44. A `title_match` under
`TITLE_MATCH_MIN` is therefore no near match, only letter pairs every title has."""

_WORD_RE = re.compile(r"[^\W\d_]{4,}")


def title_verdict(match: float | None) -> str | None:
    """What `title_match` means for the stage: `match` at or over `TITLE_MATCH_MIN` (the
    document may be the paper's text), `no_match` under it (taken for another text when the
    languages agree), None when not judged (no `--title`, or no title nor text to judge)."""
    if match is None:
        return None
    return "match" if match >= TITLE_MATCH_MIN else "no_match"


def _title_words(text: str | None) -> set[str]:
    return {w.casefold() for w in _WORD_RE.findall(text or "")}


def title_evidence_line(report: dict[str, Any]) -> str:
    """The summary's reading of `title_match`: the stage's score with its verdict against the
    cut, and for a score under the cut the words of the metadata title found in the document's
    title, so that a score such as 0.36 between unrelated titles does not read as close."""
    match = report.get("title_match")
    if match is None:
        why = "no --title given" if not report.get("metadata_title") else "the document has no title nor text"
        return f"title_match=None: not checked ({why})"
    if match >= TITLE_MATCH_MIN:
        how = "the title is printed in the document or is its title" if match == 1.0 else \
            f"at or over the stage's cut {TITLE_MATCH_MIN}"
        return f"title_match={match}: match ({how})"
    wanted = _title_words(report.get("metadata_title"))
    found = _title_words((report.get("extracted") or {}).get("title"))
    shared = f"; words of --title in the document's title: {len(wanted & found)} of {len(wanted)}" if wanted else ""
    return (f"title_match={match}: no match (under the stage's cut {TITLE_MATCH_MIN}; unrelated titles score up to "
            f"about {UNRELATED_TITLES_SCORE} on shared letter pairs, so this is no near match{shared})")


def read_source(
    source: str, max_bytes: int = MAX_BODY_BYTES, config: FetchConfig | None = None
) -> tuple[bytes, str | None, str | None]:
    """The document's bytes, its URL (the final URL after redirects for a fetch, None for a
    file) and its content type: the served one, or a file's from its extension as the text
    stage's `--fetch local:` gives it (None for other extensions: then the bytes decide,
    as for a body served without a type). URLs go through the text stage's own fetcher
    (`HttpFetcher`): the same address policy (no private, loopback or link-local address
    unless allowed), redirect checks, robots.txt, deadlines and byte caps."""
    if source.lower().startswith(("http://", "https://")):
        config = config or FetchConfig()
        if config.max_bytes > max_bytes:
            config = replace(config, max_bytes=max_bytes)
        fetcher = HttpFetcher(replace(config, max_retries=0, per_host_rate=None))
        try:
            result = fetcher.fetch(source)
        finally:
            fetcher.close()
        if not result.ok or result.body is None:
            from openmsd_build.text.fetch.result import BLOCKED_ADDRESS

            hint = ("; a private, loopback or link-local address: --allow-network CIDR permits it"
                    if result.error == BLOCKED_ADDRESS else "")
            raise UserError(f"cannot fetch {source}: {result.error} (status {result.status}){hint}")
        return result.body, result.final_url, result.content_type
    path = Path(source)
    if path.is_dir():
        raise UserError(f"{source} is a folder: inspect reads one page or PDF (a folder of them is read by "
                        "`text --fetch local:FOLDER`)")
    if not path.is_file():  # a device or a FIFO exists, but is no document (and may never end)
        raise UserError(f"{source} is not a regular file" if path.exists() else f"no such file: {source}")
    try:
        with path.open("rb") as handle:
            return handle.read(max_bytes + 1), None, media_type(str(path))
    except OSError as exc:  # unreadable (permissions, a vanished mount): the user's to fix, not a traceback
        raise UserError(f"cannot read {source}: {exc.strerror or type(exc).__name__}") from None


def inspect_document(
    data: bytes,
    url: str | None = None,
    extractor: ExtractorPool | None = None,
    timeout: float = 30.0,
    content_type: str | None = None,
    doi: str | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """Extract one document's bytes and decide its fields exactly as the text stage does: the
    same sniffing (`document_kind`), the same isolated extractor, then the stage's own
    `build_document` (cleaning, token thresholds, language on title + abstract). The raw
    extraction is kept under `extracted`; `dropped` names the stage's drop reason, if any.
    A document that is neither a PDF nor HTML is not extracted: `error` is
    `unsupported_content`, as the stage's fetch row and reject say.
    """
    kind = document_kind(data, content_type)
    if kind is None:
        return {**_empty_report(url, data, doi), "error": UNSUPPORTED,
                "error_detail": f"neither a PDF nor an HTML document (content type: {content_type or 'none'})"}
    own = extractor is None
    extractor = extractor or ExtractorPool(timeout=timeout)
    try:
        kwargs = {"url": url} if kind == "html" and url else {}
        result, reason = extractor.extract(kind, data, **kwargs)
        detail = extractor.last_error
    finally:
        if own:
            extractor.close()
    text_source = "pdf" if kind == "pdf" else "landing"
    out = {**_empty_report(url, data, doi), "text_source": text_source, "error": reason, "error_detail": detail}
    if result is None:
        return out
    out["extracted"] = {k: result.get(k) for k in ("title", "abstract", "abstracts", "content")}
    out["pdf_url"] = result.get("pdf_url")
    out["language_hints"] = result.get("language_hints") or []
    out["rules"] = dict(result.get("rules") or {})
    extraction = {**result, "kind": text_source, "url": url or ""}
    out["metadata_title"] = title
    paper = {"doi": doi or "inspect", "title": title, "title_source": "metadata" if title else None}
    out["title_match"] = extraction_title_match(metadata_titles(paper), extraction)
    out["title_verdict"] = title_verdict(out["title_match"])
    row, why = build_document(paper, [extraction])
    if row is None:
        out["dropped"] = why
        return out
    out["abstracts"] = row["abstracts"] or []
    for key in ("title", "abstract", "content", "language", "language_prob", "language_reliable",
                "n_tokens_title", "n_tokens_abstract", "n_tokens_content", "title_match", "title_rule",
                "abstract_rule"):
        out[key] = row[key]
    out["title_verdict"] = title_verdict(out["title_match"])
    out["abstract_rules"] = row["abstract_rules"] or []
    out["language_prob"] = round(float(out["language_prob"]), 4)
    out["rules"]["language"] = "cld3:title+abstract" if row["abstract"] else "cld3:title+content"
    return out


def _empty_report(url: str | None, data: bytes, doi: str | None) -> dict[str, Any]:
    """The report's fields before anything is extracted."""
    return {
        "source_url": url,
        "n_bytes": len(data),
        "text_source": None,
        "title": None,
        "abstract": None,
        "abstracts": [],
        "content": None,
        "pdf_url": None,
        "language_hints": [],
        "language": "und",
        "language_prob": 0.0,
        "language_reliable": False,
        "rules": {},
        "error": None,
        "error_detail": None,
        "dropped": None,
        "metadata_title": None,
        "extracted": None,
        "n_tokens_title": 0,
        "n_tokens_abstract": 0,
        "n_tokens_content": 0,
        "doi": doi,
        "title_match": None,
        "title_verdict": None,
        "title_rule": None,
        "abstract_rule": None,
        "abstract_rules": [],
    }


def _short(text: str | None, limit: int) -> str:
    if not text:
        return "-"
    text = text.replace("\n\n", " ¶ ")
    return text if len(text) <= limit else text[:limit] + f" … [{len(text)} chars]"


def format_summary(report: dict[str, Any], max_chars: int = 600) -> str:
    """The human-readable form of `inspect_document`'s result."""
    rules = report.get("rules") or {}
    lines = [
        f"source:    {report.get('source') or report.get('source_url') or '-'} ({report['n_bytes']} bytes, "
        f"{report['text_source'] or 'not read'})",
    ]
    if report.get("error"):
        lines.append(f"ERROR:     {report['error']} ({report.get('error_detail') or ''})")
    lines += [
        # the rule that gave the document's title and abstract (with `--title`, the paper's
        # metadata may win over the extraction's own title), else the extraction's
        f"title:     {_short(report['title'], max_chars)}   [{report.get('title_rule') or rules.get('title')}]",
        *([f"           dropped ({report['dropped']}): the document prints "
           f"{_short((report.get('extracted') or {}).get('title'), max_chars)!r}"
           + (f", the paper's metadata {report['metadata_title']!r}" if report.get("metadata_title") else "")]
          if report.get("dropped") else []),
        f"abstract:  {_short(report['abstract'], max_chars)}   "
        f"[{report.get('abstract_rule') or rules.get('abstract')}]",
        *(f"  + [{a['language']}/{a['source']}] {_short(a['text'], max_chars // 3)}" for a in report.get("abstracts") or []),
        f"content:   {_short(report['content'], max_chars)}   [{rules.get('content')}]",
        f"pdf_url:   {report.get('pdf_url') or '-'}   [{rules.get('pdf_url')}]",
        f"language:  {report['language']} p={report['language_prob']:.3f} reliable={report['language_reliable']}"
        f"   [{rules.get('language')}]  hints={','.join(report.get('language_hints') or []) or '-'}",
        f"tokens:    title={report['n_tokens_title']} abstract={report['n_tokens_abstract']} content={report['n_tokens_content']}",
        f"evidence:  {title_evidence_line(report)}",
        f"           title_rule={report.get('title_rule')} abstract_rule={report.get('abstract_rule')}"
        + (f" dropped={report['dropped']}" if report.get("dropped") else ""),
    ]
    extra = {k: v for k, v in rules.items() if k not in ("title", "abstract", "content", "pdf_url", "language")}
    if extra:
        lines.append(f"rules:     {json.dumps(extra, ensure_ascii=False)}")
    return "\n".join(lines)


def _json_for(stream: Any, report: dict[str, Any]) -> str:
    """`report` as JSON that `stream` can take: its characters as they are, or escaped
    (`\\uXXXX`, the same JSON) when the stream's encoding lacks one of them. Why: standard
    output is not always UTF-8 (`PYTHONIOENCODING`, a Latin-1 locale, a Windows console), and
    one document's title in another script stopped `inspect --json` with a UnicodeEncodeError
    after the extraction; the output stays valid JSON, which backslash escapes of the stream's
    own error handler would not be (`\\xe9`). Only that case pays for the second encoding."""
    text = json.dumps(report, ensure_ascii=False, indent=2)
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except UnicodeEncodeError:
        return json.dumps(report, indent=2)
    except LookupError:
        pass
    return text


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    """Entry point of `openmsd-build inspect`; returns 1 when extraction failed."""
    if beam_args:
        raise UserError(f"inspect does not run a pipeline; unknown options: {' '.join(beam_args)}")
    config = FetchConfig(allow_networks=tuple(args.allow_network), respect_robots=not args.no_robots,
                         contact=args.contact)
    data, fetched_url, content_type = read_source(args.source, args.max_bytes, config)
    extractor = ExtractorPool(timeout=args.timeout, max_bytes=args.max_bytes)
    try:
        report = inspect_document(data, url=args.url or fetched_url, extractor=extractor, content_type=content_type,
                                  doi=args.doi, title=args.title)
    finally:
        extractor.close()
    report = {"source": args.source, **report}
    if args.json:
        sys.stdout.write(_json_for(sys.stdout, report) + "\n")
    else:
        print(format_summary(report, args.max_chars))
    return 1 if report["error"] else 0
