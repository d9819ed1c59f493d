"""`openmsd-build report OUT`: the build's statistics, funnel and figures.

Writes `OUT/report/stats.json` (every number shown, under stable keys), `report.md`,
`report.html` (self-contained) and the figures as PNG files. The report runs on one machine
with polars (no Beam pipeline): it only aggregates columns, which polars does far faster
than per-element Beam, and it must also work on a build that stopped halfway.
"""

from __future__ import annotations

import argparse
import json
import logging

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import add_out_argument, at_least, number_from
from openmsd_build.core.notices import warn
from openmsd_build.core.parquet_io import join_path
from openmsd_build.core.staging import path_exists
from openmsd_build.report import render
from openmsd_build.report.build_card import write_build_card
from openmsd_build.report.stats import compute_stats

log = logging.getLogger(__name__)

DEFAULT_TOP = 20


def default_rate_per_host() -> float | None:
    """The fetch stage's own default, so the queue estimate matches what a fetch would do."""
    from openmsd_build.core.stages import stage_default

    return float(stage_default("text", "rate_per_host"))  # type: ignore[arg-type]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_out_argument(parser, "output root of a build (local folder or gs://...)")
    # checked when parsed, as every command's numbers: --rate-per-host 0, below or nan gave the
    # queue no time at all, silently, and --top 0 was refused only after the flags were read
    parser.add_argument(
        "--top", type=at_least(1), default=DEFAULT_TOP,
        help=f"languages, categories and hosts shown (1 or more, default {DEFAULT_TOP})"
    )
    rate = default_rate_per_host()
    parser.add_argument(
        "--rate-per-host",
        type=number_from(0, inclusive=False),
        default=rate,
        help=f"requests per second per host for the fetch-queue time estimate (above 0, default {rate:g}, the fetch "
        "default)",
    )


def _write(path: str, data: bytes) -> None:
    with FileSystems.create(path) as f:
        f.write(data)


def build_report(out: str, top: int = DEFAULT_TOP, rate_per_host: float | None = None, **_ignored) -> dict:
    """Compute the stats of `out`, write stats.json, report.md, report.html and the PNG
    figures under `OUT/report/`, and return the stats dict. `rate_per_host=None` uses the
    fetch stage's default rate. `top` is checked here for callers from Python (`run`); the
    command refuses it when parsing its flags."""
    if top < 1:
        raise UserError("--top must be at least 1")
    if not path_exists(out):  # a gs:// folder is no object: any object under it
        raise UserError(f"output root not found: {out}")
    if rate_per_host is None:
        rate_per_host = default_rate_per_host()
    stats = compute_stats(out, top=top, rate_per_host=rate_per_host)
    if not any(stats.get("built", {}).values()) and not stats.get("stage_counts"):
        raise UserError(f"{out} holds no stage output (papers/, documents/, _stats/, ...): not a build's output root")
    report = layout.report_dir(out)
    if "://" not in report:
        import os

        os.makedirs(report, exist_ok=True)
    pngs = render.figures(stats)
    stats["files"] = {"stats": "stats.json", "markdown": "report.md", "html": "report.html", "figures": sorted(pngs)}
    for name, png in pngs.items():
        _write(join_path(report, name), png)
    _write(join_path(report, "report.md"), render.render_markdown(stats, pngs).encode("utf-8"))
    _write(join_path(report, "report.html"), render.render_html(stats, pngs).encode("utf-8"))
    _write(join_path(report, "stats.json"), json.dumps(stats, indent=2, sort_keys=True).encode("utf-8"))
    card = write_build_card(out)  # OUT/README.md: each table's schema, rows and how to load it
    if card != join_path(out, "README.md"):
        from openmsd_build.core.notices import warn

        warn([f"{join_path(out, 'README.md')} is not a card this tool wrote: kept as it is; the build's card is "
              f"{card}"])
    log.info("report written to %s", report)
    return stats


def headline_table(stats: dict) -> str:
    """A short plain-text table of the headline numbers (what the demo prints)."""
    t = stats.get("table1") or {}
    rows: list[tuple[str, str]] = [
        ("documents", render.fmt_int(t.get("papers"))),  # papers with text (documents/), not papers/ rows
        ("with abstract", render.fmt_int(t.get("with_abstract"))),
        ("with full content", render.fmt_int(t.get("with_content"))),
        ("English", render.fmt_int(t.get("english"))),
        ("languages", render.fmt_int(t.get("n_languages"))),
        ("citations", render.fmt_int(t.get("citations"))),
    ]
    pairs = stats.get("pairs")
    for split in layout.SPLIT_NAMES:
        cells = []
        for rel in layout.RELATIONS:
            cell = pairs[rel][split] if pairs else None
            cells.append(f"{rel.upper()} {render.fmt_int(cell['pairs'] if cell else None)}")
        rows.append((f"pairs {split}", ", ".join(cells)))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    """CLI entry: build the report and print the headline table and where it was written.
    Beam arguments are accepted (the CLI passes unknown flags) but unused: no pipeline runs."""
    if beam_args:
        log.info("report runs no Beam pipeline; ignoring %s", " ".join(beam_args))
    stats = build_report(args.out, top=args.top, rate_per_host=args.rate_per_host)
    print(headline_table(stats))
    warn([f"{stage}: {line}" for stage, lines in (stats.get("warnings") or {}).items() for line in lines]
         + [f"{stage} is stale ({why}): its numbers describe older inputs; re-run with `openmsd-build run ... "
            f"--from-stage {stage}`" for stage, why in (stats.get("stale") or {}).items()])
    print(f"report: {join_path(layout.report_dir(args.out), 'report.html')}")
    return 0
