"""Stage 6, `contexts`: citation sentences and the papers co-cited in them (`command` says what
it reads, writes and counts)."""
