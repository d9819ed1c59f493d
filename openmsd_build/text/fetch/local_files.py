"""A folder of pages and PDFs as the text stage's source (`--fetch local:FOLDER[@MANIFEST]`).

A user may already hold the papers' files: a repository dump, an earlier crawl, a
publisher's bulk delivery. This module matches those files to papers and answers the text
stage's `fetch(url) -> FetchResult` contract from them, as `WarcBackend` answers it from
archives, so each file's body is extracted exactly as a fetched body would be and counted
and rejected the same way.

Two ways to say which file is which paper's:

* a **manifest** (`local:FOLDER@MANIFEST`): a CSV (header `doi,path` or `url,path`, or
  all three columns; a row gives a DOI or a URL or both) or Parquet file with those columns.
  A DOI row gives the paper that DOI names one more document; a URL row answers that URL
  when a paper lists it (or a landing page's `citation_pdf_url` points to it). Relative
  paths are read under FOLDER;
* a **file-naming rule** (`local:FOLDER`, no manifest): a file anywhere under FOLDER whose
  name, without its extension and in any case, is the paper's DOI with each `/` written as
  `_` (`10.2903_j.efsa.2014.3550.pdf`) or `%2F` (`10.2903%2Fj.efsa.2014.3550.pdf`), or the
  whole DOI percent-encoded. A symbolic link counts by its own name and is read from its
  target.

Only `.pdf`, `.html`, `.htm` and `.xhtml` files are documents (the media type comes from the
extension; a body starting `%PDF-` is a PDF whatever its name). Every path must stay inside
FOLDER once resolved (symbolic links and `..` included). A manifest row whose file is
missing, outside the folder, a folder, a pipe or of another type, whose path holds NUL, that has
more fields than the header, or whose URL another row gives for another file once canonical
(`URL_LISTED_TWICE`), and a document-named link out of the folder, to nothing or to another type
of file, a document-named pipe, or a document whose name is not UTF-8, is a counted reject naming it
(`LocalSource.problems`, names escaped by `shown`); so is a manifest DOI that no paper
has, a manifest URL that no paper lists (nor uses by its row's DOI), and a document file named
after no paper's DOI (`unmatched_rejects`, once the papers are read and fetched); a URL nobody put in the folder answers `not_in_folder` (a miss, as `not_in_archive` is
for archives).

The stage turns every DOI match into a task for the file's own `file://` URL (`doi_tasks`),
so a file matched to several papers (or listed twice) is read and extracted once, like one
URL planned by several papers. Pure functions and one small class; no Beam.
"""

from __future__ import annotations

import csv
import functools
import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, unquote_to_bytes, urlsplit

from openmsd_build.core import paths
from openmsd_build.core.inputs import split_local_spec
from openmsd_build.text.fetch.plan import canonical_url
from openmsd_build.text.fetch.result import MAX_BODY_BYTES, FetchResult

PREFIX = "local:"
NOT_IN_FOLDER = "not_in_folder"
MEDIA_TYPES = {".pdf": "application/pdf", ".html": "text/html", ".htm": "text/html",
               ".xhtml": "application/xhtml+xml"}
KINDS = {"application/pdf": "pdf"}  # anything else listed is a landing page

MISSING = "local_file_missing"
OUTSIDE = "local_path_outside_folder"
NOT_A_DOCUMENT = "local_file_not_a_document"
BAD_ROW = "local_manifest_bad_row"
DOI_NOT_A_PAPER = "local_doi_not_among_papers"
NAMED_FOR_NO_PAPER = "local_file_named_for_no_paper"
URL_NOT_PLANNED = "local_url_not_planned"
URL_LISTED_TWICE = "local_url_listed_twice"
URL_KEY = "url "
"""Prefix of a manifest URL row's key beside the DOI keys (`LocalSource.by_doi`): a DOI starts
with `10.`, a file stem has no space, so neither is ever taken for one."""


def is_local(spec: str) -> bool:
    """Whether a `--fetch` value names a local folder."""
    return spec.startswith(PREFIX)


def doi_file_stems(doi: str) -> tuple[str, ...]:
    """The file names (without extension, lower case) the naming rule accepts for `doi`: each
    `/` written as `_` or as `%2F` (the other characters as they are), or the whole DOI
    percent-encoded (SICI DOIs hold `( ) : ; < >`, which some tools encode too)."""
    doi = doi.strip().lower()
    return tuple(dict.fromkeys((doi.replace("/", "_"), doi.replace("/", "%2f"), quote(doi, safe="").lower())))


def file_url(path: str) -> str:
    """The `file://` URL a local document is planned, fetched and recorded under."""
    return Path(path).resolve().as_uri()


def media_type(path: str) -> str | None:
    """A document file's media type, from its extension; None for a file the stage does not read."""
    return MEDIA_TYPES.get(os.path.splitext(path)[1].lower())


@dataclass
class LocalSource:
    """What `local:FOLDER[@MANIFEST]` names: the folder, DOI -> files and URL -> file, and
    the manifest rows that could not be used (reason, key, detail)."""

    folder: str
    manifest: str | None = None
    by_doi: dict[str, list[str]] = field(default_factory=dict)
    by_url: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    with_url: set[tuple[str, str]] = field(default_factory=set)
    """(DOI, file) of the manifest rows that give a URL too: such a row is used when a paper
    plans that URL, whether or not a paper has its DOI."""
    urls_of_doi: dict[str, list[str]] = field(default_factory=dict)
    """DOI -> the URL keys (`url_key`) of its rows that give a URL too: a paper with that DOI
    uses such a row even when no paper plans its URL."""
    other_files: int = 0
    """Without a manifest: files under the folder that are not documents by their extension
    (not read; counted `local.files_of_other_types`)."""
    hidden: int = 0
    """Without a manifest: hidden files and folders under the folder (names starting with `.`),
    not read nor walked (counted `local.hidden_skipped`)."""
    manifest_rows: int = 0
    """With a manifest: its rows read (counted `local.manifest_rows`): each is used
    (`used_rows`), a reject (`problems`; a row whose URL another row gives for another file is
    one, though its DOI, if it gives one, is still used), or a repeat of a row before it
    (`repeated_rows`)."""
    used_rows: int = 0
    """With a manifest: rows that gave a file a DOI or a URL no row before gave it (counted
    `local.manifest_rows_used`)."""
    repeated_rows: int = 0
    """With a manifest: rows that give a file nothing new (its DOI and URL were given for that
    file by an earlier row, perhaps through another path to it; counted
    `local.manifest_rows_repeated`)."""

    @functools.cached_property
    def known_paths(self) -> frozenset[str]:
        """Every file matched to a DOI or a URL: the only files a `file://` URL may name."""
        return frozenset(p for files in self.by_doi.values() for p in files) | frozenset(self.by_url.values())


def parse_spec(spec: str) -> tuple[str, str | None]:
    """`local:FOLDER[@MANIFEST]` -> (folder, manifest or None); a ValueError says what is wrong.
    A folder whose name holds `@` (`data@2024`) is read as the folder when it is one: the
    split is at the first `@` after which the part before is an existing folder."""
    if not is_local(spec):
        raise ValueError(f"not a local fetch spec: {spec!r}")
    folder, manifest = split_local_spec(spec[len(PREFIX):])
    if not folder:
        raise ValueError("--fetch local: needs a folder (local:FOLDER or local:FOLDER@MANIFEST.csv)")
    if not os.path.isdir(folder):
        raise ValueError(f"--fetch local: {folder} is not a folder")
    if manifest and not os.path.isfile(manifest):
        raise ValueError(f"--fetch local: manifest {manifest} not found")
    return folder, manifest or None


def inside(folder: str, path: str) -> str | None:
    """`path` (relative paths under `folder`) resolved, when it stays inside `folder`; else None."""
    full = os.path.realpath(os.path.join(folder, path))
    return full if paths.inside(folder, full) else None


def _manifest_rows(manifest: str) -> Iterator[dict]:
    """The manifest's rows as dicts of `doi`, `url`, `path` (missing columns None)."""
    if manifest.lower().endswith(".parquet"):
        import pyarrow.parquet as pq

        table = pq.read_table(manifest)
        names = set(table.column_names)
        if "path" not in names or not names & {"doi", "url"}:
            raise ValueError(f"{manifest}: a manifest needs a path column and a doi or url column, has {sorted(names)}")
        for name in ("doi", "url", "path"):
            if name in names and not _text_type(table.schema.field(name).type):
                raise ValueError(f"{manifest}: column {name} holds {table.schema.field(name).type}, not text")
        for row in table.to_pylist():
            yield {k: row.get(k) for k in ("doi", "url", "path")}
        return
    if not manifest.lower().endswith((".csv", ".tsv", ".txt")) and _looks_like_json(manifest):
        raise ValueError(f"{manifest}: a manifest is a CSV (header doi,url,path) or Parquet file; this one holds "
                         "JSON")
    try:
        yield from _csv_rows(manifest)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{manifest}: not UTF-8 text ({exc.reason}): save the manifest as UTF-8") from None


def _text_type(dtype) -> bool:
    """Whether a Parquet manifest column of this type holds text (or only nulls)."""
    import pyarrow as pa

    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    return pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_null(dtype) or (
        hasattr(pa.types, "is_string_view") and pa.types.is_string_view(dtype))


def _looks_like_json(manifest: str) -> bool:
    """Whether the file starts as a JSON array or object (a manifest a user wrote as JSON,
    which the CSV reader would take for a header of odd names)."""
    with open(manifest, "rb") as fh:
        return fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"[", b"{")


def _csv_rows(manifest: str) -> Iterator[dict]:
    """A CSV manifest's rows (header names compared trimmed and in lower case)."""
    with open(manifest, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        names = {n.strip().lower() for n in reader.fieldnames or ()}
        if "path" not in names or not names & {"doi", "url"}:
            raise ValueError(f"{manifest}: a manifest needs a header with path and doi and/or url, has "
                             f"{sorted(names)}")
        for row in reader:
            extra = [e for e in row.pop(None, None) or () if (e or "").strip()]  # fields past the header's
            # (csv puts them under None; a row's trailing comma gives an empty one, no field)
            clean = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
            out = {k: clean.get(k) or None for k in ("doi", "url", "path")}
            if extra:
                out["problem"] = f"has {len(extra)} more field(s) than the header (a comma inside an unquoted path?)"
            yield out


def load(spec: str) -> LocalSource:
    """Read what `spec` names: the manifest's rows, or the folder's document files by name.
    Manifest rows are checked here, once (file present, inside the folder, a document); the
    problems' names are escaped as UTF-8 can carry them (`shown`)."""
    source = _read(spec)
    source.problems = [(r, shown(k), shown(d)) for r, k, d in source.problems]
    return source


def _read(spec: str) -> LocalSource:
    from openmsd_build.core.doi import try_normalize_doi

    folder, manifest = parse_spec(spec)
    source = LocalSource(folder=folder, manifest=manifest)
    if manifest is None:
        skipped: list[str] = []
        hidden: list[str] = []
        for name, path in sorted(_documents_under(folder, source.problems, skipped, hidden)):
            stem = os.path.splitext(os.path.basename(name))[0].lower()
            source.by_doi.setdefault(stem, []).append(path)
        source.other_files = len(skipped)
        source.hidden = len(hidden)
        return source
    for n, row in enumerate(_manifest_rows(manifest), start=2):
        source.manifest_rows += 1
        key = row["doi"] or row["url"] or f"{manifest}:{n}"
        if row.get("problem"):
            source.problems.append((BAD_ROW, key, f"{manifest} row {n}: {row['problem']}"))
            continue
        doi = try_normalize_doi(row["doi"]) if row["doi"] else None
        if not row["path"] or (row["doi"] and doi is None) or not (doi or row["url"]):
            source.problems.append((BAD_ROW, key, f"{manifest} row {n}: needs a path and a valid doi or url"))
            continue
        if "\0" in row["path"]:  # no file has such a name (the system refuses it)
            source.problems.append((BAD_ROW, key, f"{manifest} row {n}: its path holds a NUL character"))
            continue
        full = inside(folder, row["path"])
        if full is None:
            source.problems.append((OUTSIDE, key, f"{row['path']} is outside {folder}"))
            continue
        if os.path.isdir(full):
            source.problems.append((NOT_A_DOCUMENT, key, f"{row['path']} is a folder, not a file"))
            continue
        if not os.path.exists(full):
            source.problems.append((MISSING, key, f"{row['path']} not found under {folder}"))
            continue
        if not os.path.isfile(full):
            source.problems.append((NOT_A_DOCUMENT, key, f"{row['path']} is not a regular file (a pipe, a device?)"))
            continue
        if media_type(full) is None:
            source.problems.append((NOT_A_DOCUMENT, key, f"{row['path']}: only {', '.join(MEDIA_TYPES)} files"))
            continue
        new = bool(doi) and full not in source.by_doi.get(doi, [])
        if new:
            source.by_doi.setdefault(doi, []).append(full)
        if row["url"]:
            url = canonical_url(row["url"])
            listed_first = url not in source.by_url
            known = source.by_url.setdefault(url, full)
            if known != full:  # the same URL (once canonical) for two files
                source.problems.append((URL_LISTED_TWICE, row["url"],
                                        f"{manifest} row {n}: {url} is listed for another file already "
                                        f"({os.path.relpath(known, folder)}): this row's URL is not used"))
                continue
            new = new or listed_first
            if doi:
                source.with_url.add((doi, full))
                doi_urls = source.urls_of_doi.setdefault(doi, [])
                if url_key(row["url"]) not in doi_urls:
                    doi_urls.append(url_key(row["url"]))
                    new = True
        source.used_rows += new
        source.repeated_rows += not new  # its DOI and URL were given for this file already
    if not source.manifest_rows:
        raise ValueError(f"{manifest}: the manifest has a header and no rows")
    return source


def shown(text: str) -> str:
    """`text` as UTF-8 can carry it: a file name's bytes that are not UTF-8 (kept by Python as
    lone surrogates) written as `\\xNN`. Rejects and counts travel as UTF-8 strings, and one
    such name stopped the whole stage."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def url_key(url: str) -> str:
    """The key of a manifest URL row among the source's keys (`URL_KEY` + canonical URL)."""
    return URL_KEY + canonical_url(url)


def listed_keys(source: LocalSource) -> list[str]:
    """Every key whose rows (or files) must be used by some paper, or be rejects: the DOI keys
    (or file stems), and with a manifest its URL rows' keys."""
    return sorted(source.by_doi) + sorted(URL_KEY + url for url in source.by_url)


def _documents_under(folder: str, problems: list[tuple[str, str, str]], skipped: list[str] | None = None,
                     hidden: list[str] | None = None) -> Iterator[tuple[str, str]]:
    """(path as listed, resolved path) of the document files anywhere under `folder`
    (recursively). The name that matches a paper is the listed one (a link named after the
    DOI counts by its own name); what is read is the resolved file, which must stay inside
    `folder` (a link out of it is a problem, reported like a manifest row's). Linked folders
    are not walked (their files would be read twice, or from outside); one that leads out of
    `folder` is a problem too. Hidden files and folders (a name starting with `.`: `.Trash`,
    `.snapshot`, `.ipynb_checkpoints`, a Mac's `._NAME.pdf` companions) hold copies and
    leftovers, not the user's documents: they are neither read nor walked, and listed in
    `hidden`."""
    for top, dirs, files in os.walk(folder, followlinks=False):
        if hidden is not None:
            hidden += [os.path.join(top, name) for name in dirs + files if name.startswith(".")]
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        files = [name for name in files if not name.startswith(".")]
        for name in dirs:  # not followed; one that leads out of the folder is said, as a file's link is
            listed = os.path.join(top, name)
            if os.path.islink(listed) and inside(folder, os.path.relpath(listed, folder)) is None:
                problems.append((OUTSIDE, listed, f"{listed} (a folder) points outside {folder}"))
        for name in files:
            listed = os.path.join(top, name)
            if media_type(listed) is None:
                if skipped is not None:
                    skipped.append(listed)
                continue
            if shown(name) != name:  # not UTF-8: named after no DOI (a DOI's file name is UTF-8)
                problems.append((NAMED_FOR_NO_PAPER, listed, f"{listed}: its name is not UTF-8, named after no "
                                 "paper's DOI"))
                continue
            full = inside(folder, os.path.relpath(listed, folder))
            if full is None:
                problems.append((OUTSIDE, listed, f"{listed} points outside {folder}"))
            elif not os.path.exists(full):  # a link to nothing (or a loop of links)
                problems.append((MISSING, listed, f"{listed} is a link to a file that does not exist"))
            elif not os.path.isfile(full):
                problems.append((NOT_A_DOCUMENT, listed, f"{listed} is not a regular file (a pipe, a device?)"))
            elif media_type(full) is None:
                problems.append((NOT_A_DOCUMENT, listed, f"{listed} links to {os.path.relpath(full, folder)}, whose "
                                 f"type is not read (only {', '.join(MEDIA_TYPES)} files)"))
            else:
                yield listed, full


def doi_keys(source: LocalSource, doi: str) -> list[str]:
    """The keys of `source.by_doi` that the paper `doi` matches: its DOI (a manifest's rows)
    or the file stems of the naming rule that some file has."""
    if source.manifest is not None:
        key = doi.lower()
        return [key] if key in source.by_doi else []
    return [stem for stem in doi_file_stems(doi) if stem in source.by_doi]


def files_for(source: LocalSource, doi: str, keys: list[str] | None = None) -> list[str]:
    """The files matched to the paper `doi` (manifest DOI rows, or the naming rule); `keys`
    its `doi_keys` when the caller has them already."""
    found: list[str] = []
    for key in doi_keys(source, doi) if keys is None else keys:
        found += [p for p in source.by_doi[key] if p not in found]
    return found


def doi_tasks(source: LocalSource, doi: str, keys: list[str] | None = None) -> list[dict]:
    """Fetch tasks for the files matched to `doi`: one per file, under its `file://` URL,
    its kind from its media type (PDFs first, as the planner orders a paper's URLs)."""
    tasks = [{"doi": doi, "url": file_url(p), "kind": KINDS.get(media_type(p) or "", "landing")}
             for p in files_for(source, doi, keys)]
    return sorted(tasks, key=lambda t: (t["kind"] != "pdf", t["url"]))


def unmatched_rejects(source: LocalSource, key: str) -> list[tuple[str, str, str]]:
    """(reason, key, detail) for each file of a `by_doi` key that no paper matched: a
    manifest's DOI rows naming a DOI not among the papers, or the folder's files named like
    no paper's DOI. One a file (a row), so the warning counts rows or files; a row that gives
    a URL too is not one (a paper may read its file by that URL), but a DOI row naming a file
    that another row's URL also names is (the typo in its DOI is still unused). A URL key
    (`url_key`) that no paper planned, and no paper matched by the row's DOI, is one too. A
    typo in one DOI or URL must not be a silent drop."""
    folder = os.path.realpath(source.folder)
    out = []
    if key.startswith(URL_KEY):  # a URL row no paper planned (nor matched by its DOI)
        url = key[len(URL_KEY):]
        name = os.path.relpath(source.by_url[url], folder)
        return [(URL_NOT_PLANNED, url, f"{source.manifest}: no paper lists the URL {url} (file {name})")]
    for path in source.by_doi[key]:
        if (key, path) in source.with_url:
            continue
        name = os.path.relpath(path, folder)
        if source.manifest is not None:
            out.append((DOI_NOT_A_PAPER, key, f"{source.manifest}: no paper has the DOI {key} (file {name})"))
        else:
            out.append((NAMED_FOR_NO_PAPER, key, f"{name}: named after no paper's DOI"))
    return out


class LocalFilesBackend:
    """`fetch(url) -> FetchResult` from the files of a `LocalSource`: a `file://` URL of a
    matched file, or a URL a manifest row names; anything else `not_in_folder`. Picklable
    (only the spec travels; the source is read again on the worker)."""

    def __init__(self, spec: str, max_bytes: int | None = MAX_BODY_BYTES, source: LocalSource | None = None):
        self.spec = spec
        self.max_bytes = max_bytes
        self._source = source

    def __getstate__(self) -> dict:
        return {"spec": self.spec, "max_bytes": self.max_bytes, "_source": None}

    @property
    def source(self) -> LocalSource:
        if self._source is None:
            self._source = load(self.spec)
        return self._source

    def path_for(self, url: str) -> str | None:
        """The file that answers `url`, if any."""
        if url.startswith("file:"):  # (a file URL's escapes are the name's bytes, UTF-8 or not)
            path = os.fsdecode(unquote_to_bytes(urlsplit(url).path))
            return inside(self.source.folder, path) if self._known(path) else None
        return self.source.by_url.get(canonical_url(url))

    def _known(self, path: str) -> bool:
        """A `file://` URL is answered only for a file the source matched (never any path)."""
        return os.path.realpath(path) in self.source.known_paths

    def fetch(self, url: str) -> FetchResult:
        """The file's body as a 200 response (media type from its name, or `%PDF-`), or
        `not_in_folder`; a file larger than `max_bytes` answers `too_large`; an unreadable
        one `local_file_unreadable` (a file removed since the manifest was read)."""
        from openmsd_build.text.fetch.result import TOO_LARGE

        result = FetchResult(url=url, final_url=url)
        path = self.path_for(url)
        if path is None:
            result.error = NOT_IN_FOLDER
            return result
        try:
            size = os.path.getsize(path)
            if self.max_bytes is not None and size > self.max_bytes:
                result.error = TOO_LARGE
                return result
            with open(path, "rb") as fh:  # at most one byte past the cap: the file may grow after its size was read
                body = fh.read() if self.max_bytes is None else fh.read(self.max_bytes + 1)
            if self.max_bytes is not None and len(body) > self.max_bytes:
                result.error = TOO_LARGE
                return result
            mtime = os.path.getmtime(path)
        except OSError as exc:
            result.error = "local_file_unreadable"
            result.headers = {"x-error": str(exc)}
            return result
        content_type = "application/pdf" if body.startswith(b"%PDF-") else (media_type(path) or "")
        result.status = 200
        result.headers = {"Content-Type": content_type, "Content-Length": str(len(body))}
        result.content_type = content_type
        result.body = body
        result.fetched_at = datetime.fromtimestamp(mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return result


def write_manifest_csv(rows: Iterable[dict], path: str) -> None:
    """A manifest CSV (`doi,url,path`) from dicts: for tests and for users' scripts."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["doi", "url", "path"], lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k) or "" for k in ("doi", "url", "path")})
    Path(path).write_text(out.getvalue(), encoding="utf-8")
