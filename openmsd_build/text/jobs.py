"""What the text stage's child processes run: the extractors (`ReplayArchive`, `FetchLive`)
and document building (`BuildDocuments`), as `ExtractorPool` jobs."""

from __future__ import annotations

from openmsd_build.text.extract.pool import EXTRACTORS

STAGE_JOBS: dict[str, str] = {
    **EXTRACTORS,
    "documents": "openmsd_build.text.documents:build_documents_job",
}
