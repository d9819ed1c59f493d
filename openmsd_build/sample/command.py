"""`openmsd-build sample`: write the embedded sample inputs in their real formats.

The sample is what `make demo`, the tests and the benchmarks build from, so it is generated
(deterministically from `--seed`) rather than shipped: any size from a few hundred papers
for tests to millions for benchmarks (`--no-warc` skips pages and PDFs there).
"""

from __future__ import annotations

import argparse
import os
import time

from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least
from openmsd_build.core.stages import stage_folder_holding

MAX_PAPERS = 100_000_000
"""The largest sample written: `--papers 10000000000` (a few zeros too many) asked for tens of GB
of memory for the plan alone (MemoryError, or the machine swapping), and past 2**63 raised
OverflowError, after the earlier sample in `--out` had been removed."""


def paper_count(value: str) -> int:
    """argparse's reading of `--papers`: a whole number from 1 to `MAX_PAPERS`, refused when
    the command line is parsed (exit 2, one line naming the flag), as every command's counts."""
    papers = at_least(1)(value)
    if papers > MAX_PAPERS:
        raise argparse.ArgumentTypeError(f"{papers:,} is more than {MAX_PAPERS:,} (a typo? the plan alone takes 8 "
                                         "bytes a paper of memory before anything is written)")
    return papers


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the sample command's options on its subparser."""
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to write the sample into")
    parser.add_argument("--papers", type=paper_count, default=2000, metavar="N",
                        help=f"number of papers (1 to {MAX_PAPERS:,}, default 2000)")
    parser.add_argument("--seed", type=int, default=7, metavar="S", help="random seed (default 7)")
    parser.add_argument("--no-warc", action="store_true",
                        help="skip landing pages and PDFs (for big benchmark inputs)")


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    """Generate the sample and print a short summary; Beam arguments are not used here."""
    from openmsd_build.sample.generator import foreign_entries, generate, is_sample

    held = foreign_entries(args.out)
    if held:  # someone's folders of the same names would be emptied
        raise UserError(f"--out {args.out} is not a sample (no sample's manifest.json) but holds {', '.join(held)}, "
                        "which a sample replaces: choose a new or empty folder")
    if os.path.isdir(os.path.join(args.out, "_stats")):  # a build root: the sample's warc/ is its resume store's name
        raise UserError(f"--out {args.out} holds a build (_stats/): a sample written there puts its warc/ where the "
                        "build keeps its fetched pages; choose a new or empty folder")
    if (owned := stage_folder_holding(args.out)) is not None:
        raise UserError(f"--out {args.out} is inside {owned}, a stage's output folder, which its next run clears: "
                        "choose a folder outside it")
    if is_sample(args.out):
        print(f"note: replacing the sample in {args.out}")
    start = time.perf_counter()
    manifest = generate(args.out, papers=args.papers, seed=args.seed, warc=not args.no_warc)
    c = manifest["counts"]
    langs = c["languages"]
    print(f"sample written to {args.out} in {time.perf_counter() - start:.1f}s (seed {args.seed})")
    print(f"  papers {manifest['papers']} in {len(langs)} languages: "
          + ", ".join(f"{k} {v}" for k, v in list(langs.items())[:8]) + (" ..." if len(langs) > 8 else ""))
    print(f"  unpaywall {c['unpaywall_records']} records; crossref {c['crossref_records']} records in "
          f"{c['crossref_files']} files ({c['jats_abstracts']} JATS abstracts, {c['preprints']} preprints)")
    print(f"  opencitations {c['coci_rows']} rows in {c['coci_files']} files ({c['coci_outside']} to outside DOIs, "
          f"{c['coci_duplicates']} duplicates, {c['coci_self_citations']} self-citations)")
    if "warc_records" in c:
        print(f"  warc {c['warc_records']} records: {c['warc_200']} x 200, {c['warc_404']} x 404, "
              f"{c['warc_500']} x 500; {c['urls_absent']} of {c['urls']} URLs absent")
    print(f"  manifest: {os.path.join(args.out, 'manifest.json')}")
    return 0
