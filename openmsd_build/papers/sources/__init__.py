"""Readers for the metadata snapshots: each turns one source record into a projected dict
(only the fields the build needs, DOI normalized) or raises `RecordError` with a reason."""
