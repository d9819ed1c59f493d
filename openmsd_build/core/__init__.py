"""Shared core of every stage: DOI normalization, hashing and sharding, the output layout,
Parquet and Beam I/O helpers, rejects, stage counts, runner options and user errors."""
