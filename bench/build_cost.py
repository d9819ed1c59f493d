"""Where building a document's CPU goes: `build_document` alone over a real stage's inputs.

    .venv/bin/python bench/build_cost.py                  # the 20,000-paper bench sample
    .venv/bin/python bench/build_cost.py --papers 2000 --repeat 3

Building (`text.documents.build_document`: titles, abstracts by language, the content and the
language label) runs in the text stage's document-building children, where a whole run's noise
hides a change of a few seconds. Here it runs alone, in one process, on exactly what those
children were given: the script runs `openmsd-build text --fetch warc:` once on a copy of the
bench sample's build with a `sitecustomize` module that wraps
`documents.build_documents_job` to also write its papers to a JSON-lines file (each child its own, made
once under bench/data/), then times `build_document` over all of them (process CPU, the best
of `--repeat` passes with CLD3's memo emptied before each) and counts how often, for how long
and from which function CLD3 itself is asked: the count is the same on any machine, the
seconds are not.

Prints one JSON object: papers, CPU seconds, CLD3 calls and seconds by calling function of
`text/documents.py`, and a digest of the built rows (two versions of the rules that build
the same documents print the same digest).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

_SITECUSTOMIZE = r'''
import os
_out = os.environ.get("OPENMSD_BUILD_INPUTS")
if _out:
    import json
    from openmsd_build.text import documents

    _job = documents.build_documents_job

    def _recording_job(data, papers):
        with open(os.path.join(_out, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(papers) + "\n")
        return _job(data, papers)

    documents.build_documents_job = _recording_job
'''


def record_inputs(papers: int) -> Path:
    """The folder of the papers the stage's building children were given (made once)."""
    sys.path.insert(0, str(HERE))
    from profile_text import recorded_folder

    _, inputs, made = recorded_folder(papers, "build-inputs", _SITECUSTOMIZE, "OPENMSD_BUILD_INPUTS", "ready")
    if made:
        (inputs / "ready").write_text("")
    return inputs


def load_inputs(inputs: Path) -> list[tuple[dict, list[dict]]]:
    """Every (paper, extractions) the children built, sorted by DOI (the order they came in
    depends on the run)."""
    papers: list[tuple[dict, list[dict]]] = []
    for path in sorted(glob.glob(str(inputs / "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                papers += [(paper, extractions) for paper, extractions in json.loads(line)]
    return sorted(papers, key=lambda p: p[0]["doi"])


class _CountingDetector:
    """CLD3's detector with each call's time charged to the `text/documents.py` function
    that asked (the nearest such frame on the stack)."""

    def __init__(self, detector) -> None:
        self.detector = detector
        self.calls: Counter = Counter()
        self.seconds: Counter = Counter()

    def FindLanguage(self, text: str):  # noqa: N802 - gcld3's name
        frame = sys._getframe(1)
        while frame is not None and not frame.f_code.co_filename.endswith(os.path.join("text", "documents.py")):
            frame = frame.f_back
        caller = frame.f_code.co_name if frame is not None else "?"
        start = time.perf_counter()
        result = self.detector.FindLanguage(text=text)
        self.seconds[caller] += time.perf_counter() - start
        self.calls[caller] += 1
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=20_000, help="the bench sample's size")
    parser.add_argument("--repeat", type=int, default=2, help="timed passes (the best is kept)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from openmsd_build.core import language
    from openmsd_build.text.documents import build_document

    papers = load_inputs(record_inputs(args.papers))

    def one_pass() -> list:
        language.forget_answers()
        return [build_document(paper, extractions, []) for paper, extractions in papers]

    best = float("inf")
    for _ in range(max(1, args.repeat)):
        start = time.process_time()
        rows = one_pass()
        best = min(best, time.process_time() - start)
    counting = _CountingDetector(language.get_detector())
    language._local.detector = counting
    one_pass()
    # of the rows' values (a pickle would differ with which equal strings are one object)
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]
    print(json.dumps({
        "papers": len(papers), "build_cpu_s": round(best, 2), "ms_per_paper": round(1000 * best / len(papers), 3),
        "cld3_calls": sum(counting.calls.values()), "cld3_s": round(sum(counting.seconds.values()), 2),
        "cld3_by_caller": {k: {"calls": n, "s": round(counting.seconds[k], 2)} for k, n in counting.calls.most_common()},
        "rows_digest": digest,
    }, indent=1))


if __name__ == "__main__":
    main()
