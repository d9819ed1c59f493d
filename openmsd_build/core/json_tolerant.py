"""Reading a whole-document snapshot file item by item when it does not parse whole.

A Crossref public-data-file chunk (`{"items": [...]}`) or an OpenAlex / REST list response
is one JSON document: one malformed work in it (a raw control character, a `NaN` or
`Infinity` literal, an object cut short) makes the whole document invalid JSON. Read whole,
that one work would cost every other work of the file. Here the list of works is found
and each work is cut out and parsed on its own, so a bad work is one `invalid_json` (or
`invalid_utf8`, `record_too_large`) failure and its neighbours are kept.

The cutting is a scan of the structural tokens (strings, brackets, commas) with a bracket
stack, so a work's end is found without parsing it. A failed work whose strings are intact
(everything between its tokens is a number, a literal such as `NaN`, `:` or space: a bad value,
a raw control character, a file cut short inside it) is that one failure, and the next work
starts where its brackets close, or nothing follows when it runs to the end of a file cut
short inside it. Only a work whose strings are broken (a quote missing: what the scan takes
for strings flips, and its brackets may close anywhere or never) is resynchronised: the scan
looks for the next place where a work starts (the first key of the works already read, after
a `,`) and whose object parses, and everything in between is one failure; so is a work left
unclosed inside one of its lists (its brackets close only with the list's and the document's
own). The works' own objects often start with that key too (OpenAlex's nested `{"id": ...}`,
Crossref's funders `{"DOI": ...}`), so searching inside a work whose strings are intact took
its nested objects for works. A work whose strings are broken, or left unclosed inside a list,
still may lose its neighbours to its nested objects that way (as may one whose keys are
written without double quotes: the scan cannot tell its strings from text). Scanning is
linear in the file for well-formed works; the resynchronisation's extra scanning is bounded by
`RESYNC_BUDGET_FACTOR` times the file's size, past which the rest of the list is one failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson

from openmsd_build.core.json_records import MAX_RECORD_BYTES, Item, _parse_json

# A JSON string (escapes included), or one structural character. Everything between two
# tokens (numbers, literals, whitespace, `:`) is skipped by the regex engine.
_TOKEN_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]', re.DOTALL)  # unrolled: no per-byte alternation
_CLOSE = {ord("]"): ord("["), ord("}"): ord("{")}
# Text whose strings are intact: strings, structural characters, space, `:`, numbers and
# literals (JSON's, and the `NaN`, `Infinity`, `True`, `None`, `undefined` some writers put in),
# nothing else. A missing quote flips what reads as a string and leaves bare words (keys, text)
# outside strings.
_INTACT_RE = re.compile(rb'(?:"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},: \t\r\n]+|[+\-]?\.?[0-9][0-9.eE+\-]*'
                        rb"|[+\-]?(?:Infinity|Inf|inf|NaN|nan)|true|false|null|True|False|None|undefined)*")
# What a file cut short may end with inside an item: a string, a number or a literal cut part way.
_OPEN_TAIL_RE = re.compile(rb'"(?:[^"\\]|\\.)*\\?|[+\-.0-9eE]*[A-Za-z]*')
_WS = b" \t\r\n"
# Total bytes the resynchronisation may rescan, as a multiple of the file's size.
RESYNC_BUDGET_FACTOR = 4


def find_list(data: bytes, list_keys: tuple[tuple[str, ...], ...]) -> int | None:
    """Offset just after the `[` of the first list found at one of `list_keys` in a JSON
    object document (or of a document that is a list), or None (no such key, or the
    prefix itself broken)."""
    start = _skip_ws(data, 0)
    if start < len(data) and data[start] == ord("["):
        return start + 1
    if start >= len(data) or data[start] != ord("{"):
        return None
    wanted = {keys for keys in list_keys if keys}
    deepest = max(map(len, wanted), default=0)  # a key path longer than this cannot match
    stack: list[int] = []
    path: list[str | None] = []
    last_key: str | None = None
    expecting_key = False
    for match in _TOKEN_RE.finditer(data, start):
        token = match.group()
        first = token[0]
        if first == ord('"'):
            if expecting_key:
                try:
                    last_key = orjson.loads(token)
                except orjson.JSONDecodeError:
                    return None
                expecting_key = False
            continue
        if first in (ord("{"), ord("[")):
            # the key path is built only where it can match: building it at every bracket
            # would cost the depth each time, quadratic in a document nested 100,000 deep
            if (first == ord("[") and stack and stack[-1] == ord("{") and len(stack) <= deepest
                    and (*path[1:], last_key) in wanted):
                return match.end()
            stack.append(first)
            path.append(last_key if len(stack) > 1 else None)
            expecting_key = first == ord("{")
            last_key = None
            continue
        if first == ord(","):
            expecting_key = bool(stack) and stack[-1] == ord("{")
            continue
        if not stack or stack[-1] != _CLOSE[first]:
            return None
        stack.pop()
        path.pop()
        expecting_key = False
        if not stack:
            return None
    return None


def _skip_ws(data: bytes, pos: int) -> int:
    size = len(data)
    while pos < size and data[pos] in _WS:
        pos += 1
    return pos


class _Budget:
    """Bytes the resynchronisation may still rescan in one file (shared by every step)."""

    def __init__(self, size: int) -> None:
        self.left = RESYNC_BUDGET_FACTOR * size + (1 << 20)

    def item_closes(self, data: bytes, start: int) -> bool:
        """Whether the item at `start` closes (its scan charged to the budget)."""
        end, closed = _item_end(data, start, min(len(data), start + MAX_RECORD_BYTES + 1))
        self.left -= end - start
        return closed


def _item_end(data: bytes, pos: int, limit: int, key: str | None = None,
              budget: _Budget | None = None) -> tuple[int, bool]:
    """From `pos` (the first byte of an item): (end, True) for an item whose brackets close
    at `end` (its `,` or `]`); (offset, False) for a broken item, `offset` being the bracket
    that closes the wrong kind, `limit` when no end comes before it, or -- with the works'
    first `key` and a `budget` -- where the next whole item starts (a `,{"<key>"` whose own
    item closes). An item cut short inside a string flips what the scan takes for strings,
    so its brackets may never close: without that stop each such item would be scanned to
    `limit` (quadratic over a file of them). While the scan has met nothing but values between
    its tokens (`_INTACT_RE`), its strings are as written, and a `,{"<key>"` it passes is
    an object nested in this item (a funder's `DOI`, an author's `id`) unless it stands right
    inside an object (this item left unclosed). Checking where items start stops when the
    file's `budget` is spent."""
    candidates = _candidates(data, pos + 1, key, limit) if key is not None and budget else iter(())
    next_start = next(candidates, None)
    stack: list[int] = []
    intact, checked = True, pos  # the strings are as written up to `checked`
    for match in _TOKEN_RE.finditer(data, pos, limit):
        if next_start is not None and match.start() > next_start and intact:
            intact, checked = _strings_intact(data, checked, match.start()), match.start()
        while next_start is not None and match.start() > next_start:
            assert budget is not None
            if budget.left <= 0:
                next_start = None
                break
            # (checked at the token after the candidate's `{`: `stack[-2]` holds what the `,`
            # before it was in) with the strings intact, only a `,{` right inside an object,
            # where JSON allows a key and no object, starts an item: the one before it was
            # left unclosed
            if (not intact or (len(stack) >= 2 and stack[-2] == ord("{"))) and budget.item_closes(data, next_start):
                return next_start, False
            next_start = next(candidates, None)
        first = match.group()[0]
        if first == ord('"'):
            continue
        if first in (ord("{"), ord("[")):
            stack.append(first)
        elif first == ord(","):
            if not stack:
                return match.start(), True
        else:
            if not stack:
                return match.start(), first == ord("]")
            if stack[-1] != _CLOSE[first]:
                return match.start(), False
            stack.pop()
    return limit, False


_FIRST_KEY_RE = re.compile(rb'\{[ \t\r\n]*("(?:[^"\\]|\\.)*")[ \t\r\n]*:')


def _raw_first_key(data: bytes, pos: int) -> str | None:
    """The first key of the object starting at `pos`, read without parsing the object."""
    match = _FIRST_KEY_RE.match(data, pos)
    if not match:
        return None
    try:
        key = orjson.loads(match.group(1))
    except orjson.JSONDecodeError:
        return None
    return key if isinstance(key, str) else None


def iter_list_items(data: bytes, path: str, list_start: int) -> Iterator[Item]:
    """Items of the JSON list starting at `list_start` (just after its `[`), each parsed on
    its own (see the module docstring). Origins are `path:#index`, as when the document
    parses whole; a failure takes one index."""
    size = len(data)
    pos = list_start
    index = 0
    key: str | None = None
    budget = _Budget(size)
    while True:
        pos = _skip_ws(data, pos)
        if pos >= size:
            return  # the file ends inside the list: what was read is kept
        if data[pos] == ord("]"):
            after = _skip_ws(data, pos + 1)
            if after < size and data[after] == ord(","):
                # a stray `]` (the list goes on after it): one failure, then the next item
                yield Item(f"{path}:#{index}", reason="invalid_json", detail="stray ] inside the list",
                           raw=data[max(0, pos - 100):pos + 100])
                index += 1
                pos = after + 1
                continue
            return
        if data[pos] == ord(","):
            pos += 1
            continue
        key = key or _raw_first_key(data, pos)
        end, closed = _item_end(data, pos, min(size, pos + MAX_RECORD_BYTES + 1), key, budget)
        origin = f"{path}:#{index}"
        index += 1
        if closed:  # (within MAX_RECORD_BYTES: the scan stops there)
            item = _parse_json(data[pos:end], origin)
            if item.reason is not None and not _strings_intact(data, pos, end):
                # an item cut short inside a string flips what is string and what is not,
                # and can seem to close further on, past good items: resume at the first
                # item start inside it that is a whole item of its own
                resume = _resync(data, pos + 1, key, budget, end)
                if resume is not None:
                    yield item._replace(raw=data[pos:min(resume, pos + 200)])
                    pos = resume
                    continue
            yield item
            pos = end
            continue
        # Cut short or mis-nested: nothing follows an item that runs to the end of the file
        # with its strings intact (the file is cut short); the next item starts at `end` when
        # a whole one was found there, else it is looked for, past the wrong closer when the
        # strings are intact (works share their first key: the bad item's own tells it when
        # no work was read yet)
        intact = _strings_intact(data, pos, min(end, size), open_end=end >= size)
        if end >= size and intact and _left_open(data, pos, size):
            resume: int | None = None  # the file is cut short inside this item
        elif pos < end < size and data[end] == ord("{") and budget.left > 0 and budget.item_closes(data, end):
            resume = end
        elif end >= size:  # its brackets close only with the list's own: left unclosed inside a list
            resume = _resync(data, pos + 1, key, budget)
        else:  # past a wrong closer: nothing before it starts an item when the strings are intact
            resume = _resync(data, end if intact else pos + 1, key, budget)
        stop = size if resume is None else resume
        if end - pos > MAX_RECORD_BYTES:
            reason, detail = "record_too_large", f"item of more than {MAX_RECORD_BYTES} bytes"
        else:
            reason, detail = "invalid_json", "item is cut short or its brackets do not match"
        yield Item(origin, reason=reason, detail=detail, raw=data[pos:min(stop, pos + 200)])
        if resume is None:
            return
        pos = resume


def _strings_intact(data: bytes, start: int, end: int, open_end: bool = False) -> bool:
    """Whether `data[start:end]` has its strings as written (`_INTACT_RE`). `open_end`: it is a
    file's end, which may stop inside a string or a literal."""
    stop = _INTACT_RE.match(data, start, end).end()  # type: ignore[union-attr]  (matches the empty text)
    return stop == end or (open_end and _OPEN_TAIL_RE.fullmatch(data, stop, end) is not None)


def _candidates(data: bytes, start: int, key: str | None, stop: int) -> Iterator[int]:
    """Offsets of `{` that may start the next item: after a `,`, followed by the works'
    first key when one is known (else by any key)."""
    tail = re.escape(orjson.dumps(key)) if key is not None else rb'"'
    pattern = re.compile(rb",[ \t\r\n]*(\{[ \t\r\n]*" + tail + rb")")
    for match in pattern.finditer(data, start, stop):
        yield match.start(1)


def _left_open(data: bytes, start: int, end: int) -> bool:
    """Whether brackets opened in `data[start:end]` are still open at `end` (a file cut short),
    rather than closed by the list's and the document's own (an item left unclosed inside one
    of its lists)."""
    depth = 0
    for match in _TOKEN_RE.finditer(data, start, end):
        first = match.group()[0]
        if first in (ord("{"), ord("[")):
            depth += 1
        elif first in (ord("}"), ord("]")):
            depth -= 1
    return depth > 0


def _parses_as_object(data: bytes) -> bool:
    try:
        return isinstance(orjson.loads(data), dict)
    except orjson.JSONDecodeError:
        return False


def _resync(data: bytes, start: int, key: str | None, budget: _Budget, stop: int | None = None) -> int | None:
    """The offset of the next item whose brackets close (and that starts with the works'
    first key, or parses as an object when no work was read yet); None when there is none
    or the file's budget is spent. A closed item that does not parse is kept as a
    candidate: it becomes its own failure, not part of this one."""
    size = len(data)
    for candidate in _candidates(data, start, key, size if stop is None else stop):
        if budget.left <= 0:
            return None
        limit = min(size, candidate + MAX_RECORD_BYTES + 1)
        end, closed = _item_end(data, candidate, limit)
        budget.left -= end - candidate
        if closed and (key is not None or _parses_as_object(data[candidate:end])):
            return candidate
    return None
