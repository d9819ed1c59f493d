"""The text stage's floor: its own per-document work with no runner, next to the anchor on
the same cores.

    .venv/bin/python bench/text_floor.py                 # the 20,000-paper bench sample, 2 lanes, 3 turns
    .venv/bin/python bench/text_floor.py --papers 2000 --turns 1

Why: the stage's wall goal (issue 40: at most 1.2x the anchor, trafilatura + pypdfium2 over
the same records, spread over as many processes as cores) leaves the runner, the archive
index, the shuffles, isolation and writing whatever the stage's own work does not use. This
script measures that work alone: every extractor call the stage made, with the arguments it
made it with, and every document it built, split over `--lanes` processes started at once,
each reading its share of the WARC as the anchor's lanes do; no Beam, no child processes, no
pickling, no Parquet. Its wall over the anchor's estimates the best any execution of today's
rules could reach on these cores (1.2x minus it is the budget for everything else). An
estimate: it reads the WARC with warcio, as the anchor does (1.4 s more CPU for the whole
bench WARC than the stage's own reader), splits the records by position, not by cost, and
a deferred landing page's second, whole extraction reuses the body in memory where the stage
reads the record again; the stage's per-document steps outside extraction and
`build_document` (which papers need a page's main text, the shared-abstract check) are not in
it.

What the stage did is recorded once under bench/data/ (`extract-calls-N/`): one stage run with
a `sitecustomize` module that wraps the extractor children's jobs (`pool._load`) to write each
call's document digest and keyword arguments (a landing page deferred without its main text,
and read again whole when building needed it, is two calls, as in the stage); the papers and
extractions its building children were given are `build_cost.py`'s recording. Each recording
keeps the digest of the text stage's code it was made with (`profile_text.text_code_digest`);
a reused one made with other code is named. Times are taken inside each lane from its first
record to its last document (imports and loading the recordings excluded on both sides; what
was loaded is frozen out of the collector's walks), on both sides alike.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYTHON = sys.executable

_SITECUSTOMIZE = r'''
import os
_out = os.environ.get("OPENMSD_EXTRACT_CALLS")
if _out:
    import hashlib
    import json
    from openmsd_build.text.extract import pool

    _load = pool._load

    def _recording_load(spec):
        function = _load(spec)
        if not spec.startswith("openmsd_build.text.extract."):
            return function

        def call(data, **kwargs):
            with open(os.path.join(_out, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as f:
                f.write(json.dumps({"spec": spec, "sha1": hashlib.sha1(data).hexdigest(), "kwargs": kwargs}) + "\n")
            return function(data, **kwargs)

        return call

    pool._load = _recording_load
'''


def _warcs(sample: Path) -> list[Path]:
    return sorted((sample / "warc").glob("*.warc.gz"))


def read_calls(folder: Path) -> dict[str, list[dict]]:
    """The recorded calls by their document's digest, each digest's calls in one order (the
    order the children happened to take them in is not the plan's)."""
    calls: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            call = json.loads(line)
            calls[call.pop("sha1")].append(call)
    for found in calls.values():
        found.sort(key=lambda c: json.dumps(c, sort_keys=True))
    return dict(calls)


def plan_calls(calls: dict[str, list[dict]], records: dict[str, list[int]]) -> tuple[dict[str, list[dict]], int]:
    """(response position -> its calls, calls whose document is in no record): a document's
    calls go to its records in turn (a body archived under several URLs was extracted once per
    URL), so that each lane replays the calls of the records it reads."""
    plan: dict[int, list[dict]] = defaultdict(list)
    unmatched = 0
    for sha1, found in calls.items():
        positions = records.get(sha1)
        if not positions:
            unmatched += len(found)
            continue
        for k, call in enumerate(found):
            plan[positions[k % len(positions)]].append(call)
    return {str(k): v for k, v in sorted(plan.items())}, unmatched


def record_calls(papers: int) -> Path:
    """The folder of the stage's extractor calls and their plan (made once): `plan.json` maps
    each 200 response's position in the WARC to the calls the stage made on its body (a body
    archived under several URLs has its calls shared out over its records)."""
    sys.path.insert(0, str(HERE))
    from profile_text import recorded_folder
    from text_bench import responses

    sample, folder, made = recorded_folder(papers, "extract-calls", _SITECUSTOMIZE, "OPENMSD_EXTRACT_CALLS",
                                           "plan.json")
    if not made:
        return folder
    records: dict[str, list[int]] = defaultdict(list)
    for position, record in responses(_warcs(sample)):
        records[hashlib.sha1(record.content_stream().read()).hexdigest()].append(position)
    plan, unmatched = plan_calls(read_calls(folder), records)
    (folder / "plan.json").write_text(json.dumps({"calls": sum(map(len, plan.values())) + unmatched,
                                                  "unmatched": unmatched, "plan": plan}))
    return folder


def floor_lane(papers: int, lane: int, lanes: int) -> dict:
    """One lane of the floor: its share of the WARC's records through the calls the stage made
    on them, then its share of the papers built; seconds and CPU of each part."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(HERE))
    from build_cost import load_inputs, record_inputs
    from run_all import prepare_text_sample
    from text_bench import responses

    from openmsd_build.text.documents import build_document
    from openmsd_build.text.extract.pool import _load

    sample, _ = prepare_text_sample(papers)
    plan = json.loads((HERE / "data" / f"extract-calls-{papers}" / "plan.json").read_text())["plan"]
    # what the lane loaded is left out of the collector's walks (`gc.freeze`), as the
    # stage's children never hold it: a full collection over it would be charged to the rules
    gc.freeze()
    # the extractors are loaded (imported) before the clock starts, as the anchor's are
    functions = {spec: _load(spec) for spec in sorted({c["spec"] for cs in plan.values() for c in cs})}
    calls = errors = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for position, record in responses(_warcs(sample)):
        if position % lanes != lane:
            continue
        body = record.content_stream().read()
        for call in plan.get(str(position), ()):
            try:
                functions[call["spec"]](body, **call["kwargs"])
            except Exception:  # noqa: BLE001 - a document the stage rejected too; counted, not timed apart
                errors += 1
            calls += 1
    extract_wall, extract_cpu = time.perf_counter() - wall, time.process_time() - cpu
    built = load_inputs(record_inputs(papers))[lane::lanes]
    gc.freeze()
    wall, cpu = time.perf_counter(), time.process_time()
    for paper, extractions in built:
        build_document(paper, extractions, [])
    build_wall, build_cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"calls": calls, "errors": errors, "papers": len(built), "extract_s": extract_wall,
            "extract_cpu_s": extract_cpu,
            "s": extract_wall + build_wall, "cpu_s": extract_cpu + build_cpu}


def anchor_lane(papers: int, lane: int, lanes: int) -> dict:
    """One lane of the anchor (`text_bench.direct`), timed as the floor's lanes are."""
    sys.path.insert(0, str(HERE))
    import pypdfium2  # noqa: F401 - imported before the clock starts, as the floor's extractors are
    import trafilatura  # noqa: F401
    from run_all import prepare_text_sample
    from text_bench import direct

    sample, _ = prepare_text_sample(papers)
    gc.freeze()  # as the floor's lanes do
    cpu = time.process_time()
    result = direct(_warcs(sample), lane=lane, lanes=lanes)
    return {"s": result["seconds"], "cpu_s": time.process_time() - cpu}


def _lanes(side: str, papers: int, lanes: int) -> list[dict]:
    """`lanes` processes of one side started together; each lane's JSON."""
    procs = [subprocess.Popen([PYTHON, __file__, "--papers", str(papers), "--lane-of", side, "--lane", str(k),
                               "--lanes", str(lanes)], stdout=subprocess.PIPE, text=True) for k in range(lanes)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"a {side} lane failed")
    return [json.loads(out.strip().splitlines()[-1]) for out in outs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=20_000, help="the bench sample's size")
    parser.add_argument("--lanes", type=int, default=len(os.sched_getaffinity(0)), help="processes a side")
    parser.add_argument("--turns", type=int, default=3, help="the sides take turns; medians are printed")
    parser.add_argument("--json", type=Path, default=HERE / "results_floor.json", help="where the result is written")
    parser.add_argument("--lane-of", choices=("floor", "anchor"), help=argparse.SUPPRESS)
    parser.add_argument("--lane", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lane_of:
        lane = floor_lane if args.lane_of == "floor" else anchor_lane
        print(json.dumps(lane(args.papers, args.lane, args.lanes)))
        return
    sys.path.insert(0, str(HERE))
    from build_cost import record_inputs

    record_inputs(args.papers)
    folder = record_calls(args.papers)
    recorded = json.loads((folder / "plan.json").read_text())
    if not recorded["calls"] or recorded["unmatched"]:
        raise SystemExit(f"{folder}: {recorded['calls']} calls recorded, {recorded['unmatched']} of them on no "
                         "record of the WARC: remove the folder to record again")
    turns = []
    for turn in range(max(1, args.turns)):  # who goes first alternates: a shared host's slow phase hits both
        order = ("floor", "anchor") if turn % 2 == 0 else ("anchor", "floor")
        sides = {side: _lanes(side, args.papers, args.lanes) for side in order}
        floor, anchor = sides["floor"], sides["anchor"]
        turns.append({
            "floor_s": max(r["s"] for r in floor), "floor_cpu_s": sum(r["cpu_s"] for r in floor),
            "extract_cpu_s": sum(r["extract_cpu_s"] for r in floor),
            "build_cpu_s": sum(r["cpu_s"] - r["extract_cpu_s"] for r in floor),
            "errors": sum(r["errors"] for r in floor),
            "anchor_s": max(r["s"] for r in anchor), "anchor_cpu_s": sum(r["cpu_s"] for r in anchor),
        })
    med = {key: statistics.median(t[key] for t in turns) for key in turns[0]}
    from profile_text import text_code_digest

    result = {
        "machine": f"{len(os.sched_getaffinity(0))} cores, load {os.getloadavg()[0]:.1f} at the end",
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "code": text_code_digest(),
        "papers": args.papers, "lanes": args.lanes, "turns": len(turns), "calls": recorded["calls"],
        "calls_unmatched": recorded["unmatched"], **{k: round(v, 2) for k, v in med.items()},
        "wall_ratio": round(med["floor_s"] / med["anchor_s"], 3),
        "wall_ratio_turns": [round(t["floor_s"] / t["anchor_s"], 3) for t in turns],
        "cpu_ratio": round(med["floor_cpu_s"] / med["anchor_cpu_s"], 3),
        "extract_cpu_ratio": round(med["extract_cpu_s"] / med["anchor_cpu_s"], 3),
        "build_cpu_ratio": round(med["build_cpu_s"] / med["anchor_cpu_s"], 3),
    }
    text = json.dumps(result, indent=1)
    print(text)
    args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
