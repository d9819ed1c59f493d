"""Stage 1, `papers`: read the metadata snapshots (`sources/`), normalize DOIs, join the
records of one DOI and merge them field by field (`merge_reference` states the precedence,
`merge_fast` runs it on columns) -> `OUT/papers/`."""
