"""Fetch tasks resolved against an archive index by joining, one redirect hop per round.

Replaying from an archive used to need a whole-archive `url -> record` dict in every
worker (`WarcBackend`); at a real crawl's size (100M+ records) no worker can hold it. The
text stage instead joins its tasks with index rows (`warc_index`) by canonical URL in the
pipeline. A *unit* is one raw URL with the tasks (papers) that planned it; each round looks
its current URL up in the index:

* no row: resolved, the URL (or a redirect target) is not archived;
* a final record (not a 3xx with a Location): resolved;
* an archived redirect: the unit moves to the Location's URL for the next round, until
  `max_redirects + 1` lookups were made (then resolved: replay says too_many_redirects).

Every row found is added to the unit's `chain` (canonical URL -> file, offset, length), so
when the unit is resolved a `WarcBackend(index=chain)` replays exactly what a backend with
the whole index would — the same lookups find the same records, the misses miss — while
holding only this URL's few entries. The redirect rounds after the first are joined with
a *hop index* (only rows that some archived redirect points to), which is small, so the
whole index is shuffled once per pass rather than once per hop.
"""

from __future__ import annotations

from collections.abc import Iterable

from openmsd_build.text.fetch.plan import canonical_url
from openmsd_build.text.fetch.result import REDIRECT_STATUSES, join_location

DEFAULT_MAX_REDIRECTS = 5


def new_units(tasks: Iterable[dict]) -> list[dict]:
    """Tasks -> one unit per raw URL, its tasks sorted by DOI (the first is the one the
    `fetch/` row names, as when a host's URLs were fetched in (url, doi) order)."""
    by_url: dict[str, list[dict]] = {}
    for task in tasks:
        by_url.setdefault(task["url"], []).append(task)
    return [
        {"url": url, "tasks": sorted(group, key=lambda t: t["doi"]), "current": url, "lookups": 0,
         "chain": [], "complete": None}
        for url, group in sorted(by_url.items())
    ]


def rounds(max_redirects: int = DEFAULT_MAX_REDIRECTS) -> int:
    """Join rounds a pass needs: replay looks a chain up at most `max_redirects + 1` times,
    and `advance` resolves a unit at that lookup, so nothing is pending after the last."""
    return max_redirects + 1


def lookup_key(unit: dict) -> str:
    """The index key the unit's next lookup joins on."""
    return canonical_url(unit["current"])


def redirect_target(row: dict) -> str | None:
    """The canonical URL an archived redirect row points to (None for a final record):
    the keys of the hop index. Joined from the row's canonical URL, which resolves a
    relative Location to the same canonical target as the raw URL replay follows."""
    location = row.get("location")
    if row.get("status") in REDIRECT_STATUSES and location:
        return canonical_url(join_location(row["url"], location))
    return None


def advance(unit: dict, row: dict | None, max_redirects: int = DEFAULT_MAX_REDIRECTS) -> tuple[dict, bool]:
    """One lookup of `unit` with the index row of its current URL (None: not archived).
    Returns the new unit and whether it is resolved; `complete` says whether its chain ends
    in an archived record (or runs out of hops), i.e. replay gives the archived answer
    rather than `not_in_archive` (`WarcBackend.__contains__`)."""
    unit = {**unit, "lookups": unit["lookups"] + 1}
    if row is None:
        return {**unit, "complete": False}, True
    chain = [*unit["chain"], [row["url"], row["warc_file"], row["offset"], row["length"]]]
    unit["chain"] = chain
    location = row.get("location")
    if row.get("status") in REDIRECT_STATUSES and location:
        if unit["lookups"] >= max_redirects + 1:
            return {**unit, "complete": True}, True
        return {**unit, "current": join_location(unit["current"], location)}, False
    return {**unit, "complete": True}, True


def chain_index(unit: dict) -> dict[str, tuple]:
    """The unit's chain as a `WarcBackend` index (canonical URL -> file, offset, length)."""
    return {url: (warc_file, offset, length) for url, warc_file, offset, length in unit["chain"]}
