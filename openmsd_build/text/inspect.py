"""`openmsd-build inspect PATH_OR_URL [--json]`: what the text stage makes of one document.

For debugging extraction rules on a single landing page or PDF without running a pipeline:
the document is read from disk or fetched once, sniffed as PDF or HTML by its bytes (servers
mislabel content types), extracted in the same isolated worker the text stage uses (so a
hang or crash here behaves as it would in a build), and the language is detected the same
way. The output names the rule behind every field.

(Named `inspect.py` as the CLI registry expects; it is only ever imported as
`openmsd_build.text.inspect`, so it does not shadow the standard library module.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from openmsd_build.core.errors import UserError
from openmsd_build.core.textclean import count_tokens
from openmsd_build.text.extract.isolate import DEFAULT_MAX_BYTES, IsolatedExtractor
from openmsd_build.text.language import detect_language

FETCH_TIMEOUT_S = 30
USER_AGENT = "openmsd-build-inspect/0.1 (+https://github.com/; research dataset builder)"
_PDF_MAGIC = b"%PDF-"
_SNIFF_BYTES = 1024  # the PDF header may follow some junk bytes; readers look in the first 1 KB
_LANGUAGE_CONTENT_CHARS = 1000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="PATH_OR_URL", help="a local HTML / PDF file or an http(s) URL")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    parser.add_argument("--url", default=None, help="page URL for a local file (to absolutize the PDF link)")
    parser.add_argument("--timeout", type=float, default=30.0, help="extraction time limit in seconds (default 30)")
    parser.add_argument(
        "--max-bytes", type=int, default=DEFAULT_MAX_BYTES, help=f"largest document accepted (default {DEFAULT_MAX_BYTES})"
    )
    parser.add_argument("--max-chars", type=int, default=600, help="summary only: characters shown per field")


def sniff_kind(data: bytes) -> str:
    """"pdf" when the PDF magic appears in the first kilobyte, else "html"."""
    return "pdf" if _PDF_MAGIC in data[:_SNIFF_BYTES] else "html"


def read_source(source: str, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[bytes, str | None]:
    """The document's bytes and its URL (the final URL after redirects for a fetch, None for a
    file). A fetch stops reading after `max_bytes` + 1 bytes so the size check still fires."""
    if source.lower().startswith(("http://", "https://")):
        import requests

        try:
            with requests.get(
                source, timeout=FETCH_TIMEOUT_S, stream=True, headers={"User-Agent": USER_AGENT}
            ) as response:
                response.raise_for_status()
                chunks, total = [], 0
                for chunk in response.iter_content(chunk_size=65536):
                    chunks.append(chunk)
                    total += len(chunk)
                    if total > max_bytes:
                        break
                return b"".join(chunks), response.url
        except requests.RequestException as exc:
            raise UserError(f"cannot fetch {source}: {exc}") from exc
    path = Path(source)
    if not path.is_file():
        raise UserError(f"no such file: {source}")
    with path.open("rb") as handle:
        return handle.read(max_bytes + 1), None


def inspect_document(
    data: bytes, url: str | None = None, extractor: IsolatedExtractor | None = None, timeout: float = 30.0
) -> dict[str, Any]:
    """Extract one document's bytes and detect its language: the JSON object `inspect` prints.

    Language is detected on title + abstract (the OpenMSD definition); without an abstract,
    on title + the start of the content, which `rules["language"]` records.
    """
    kind = sniff_kind(data)
    own = extractor is None
    extractor = extractor or IsolatedExtractor(timeout=timeout)
    try:
        kwargs = {"url": url} if kind == "html" and url else {}
        result, reason = extractor.extract(kind, data, **kwargs)
        detail = extractor.last_error
    finally:
        if own:
            extractor.close()
    out: dict[str, Any] = {
        "source_url": url,
        "n_bytes": len(data),
        "text_source": "pdf" if kind == "pdf" else "landing",
        "title": None,
        "abstract": None,
        "content": None,
        "pdf_url": None,
        "language_hints": [],
        "language": "und",
        "language_prob": 0.0,
        "language_reliable": False,
        "rules": {},
        "error": reason,
        "error_detail": detail,
    }
    if result is not None:
        for key in ("title", "abstract", "content", "pdf_url", "language_hints", "rules"):
            out[key] = result.get(key, out[key])
    out["rules"] = dict(out["rules"] or {})
    title, abstract, content = out["title"] or "", out["abstract"] or "", out["content"] or ""
    if abstract:
        code, prob, reliable = detect_language(title, abstract)
        out["rules"]["language"] = "cld3:title+abstract"
    elif content:
        code, prob, reliable = detect_language(title, content[:_LANGUAGE_CONTENT_CHARS])
        out["rules"]["language"] = "cld3:title+content"
    else:
        code, prob, reliable = detect_language(title, None)
        out["rules"]["language"] = "cld3:title" if title else None
    out.update(language=code, language_prob=round(prob, 4), language_reliable=reliable)
    out["n_tokens_title"] = count_tokens(title)
    out["n_tokens_abstract"] = count_tokens(abstract)
    out["n_tokens_content"] = count_tokens(content)
    return out


def _short(text: str | None, limit: int) -> str:
    if not text:
        return "-"
    text = text.replace("\n\n", " ¶ ")
    return text if len(text) <= limit else text[:limit] + f" … [{len(text)} chars]"


def format_summary(report: dict[str, Any], max_chars: int = 600) -> str:
    """The human-readable form of `inspect_document`'s result."""
    rules = report.get("rules") or {}
    lines = [
        f"source:    {report.get('source') or report.get('source_url') or '-'} ({report['n_bytes']} bytes, {report['text_source']})",
    ]
    if report.get("error"):
        lines.append(f"ERROR:     {report['error']} ({report.get('error_detail') or ''})")
    lines += [
        f"title:     {_short(report['title'], max_chars)}   [{rules.get('title')}]",
        f"abstract:  {_short(report['abstract'], max_chars)}   [{rules.get('abstract')}]",
        f"content:   {_short(report['content'], max_chars)}   [{rules.get('content')}]",
        f"pdf_url:   {report.get('pdf_url') or '-'}   [{rules.get('pdf_url')}]",
        f"language:  {report['language']} p={report['language_prob']:.3f} reliable={report['language_reliable']}"
        f"   [{rules.get('language')}]  hints={','.join(report.get('language_hints') or []) or '-'}",
        f"tokens:    title={report['n_tokens_title']} abstract={report['n_tokens_abstract']} content={report['n_tokens_content']}",
    ]
    extra = {k: v for k, v in rules.items() if k not in ("title", "abstract", "content", "pdf_url", "language")}
    if extra:
        lines.append(f"rules:     {json.dumps(extra, ensure_ascii=False)}")
    return "\n".join(lines)


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    """Entry point of `openmsd-build inspect`; returns 1 when extraction failed."""
    if beam_args:
        raise UserError(f"inspect does not run a pipeline; unknown options: {' '.join(beam_args)}")
    data, fetched_url = read_source(args.source, args.max_bytes)
    extractor = IsolatedExtractor(timeout=args.timeout, max_bytes=args.max_bytes)
    try:
        report = inspect_document(data, url=args.url or fetched_url, extractor=extractor)
    finally:
        extractor.close()
    report = {"source": args.source, **report}
    if args.json:
        json.dump(report, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_summary(report, args.max_chars))
    return 1 if report["error"] else 0
