"""Stage 3, `citations`: read OpenCitations dumps (`opencitations`) and keep the edges whose
both ends are kept papers (`graph`) -> `OUT/citations/`."""
