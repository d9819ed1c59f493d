"""What the text stage's child processes run: the extractors (`FetchAndExtract`), document
building (`BuildDocuments`) and the head start (`extract/ahead.py`). One set of jobs, so
that one set of warm children serves every DoFn of a local run (`isolate.prewarm`,
`ExtractorPool.release`). Beam-free, so a run can start the children before importing Beam.
"""

from __future__ import annotations

from openmsd_build.text.extract.isolate import EXTRACTORS

AHEAD_JOB = "ahead"

STAGE_JOBS: dict[str, str] = {
    **EXTRACTORS,
    "documents": "openmsd_build.text.documents:build_documents_job",
    AHEAD_JOB: "openmsd_build.text.extract.ahead:extract_ahead",
}
