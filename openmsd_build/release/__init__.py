"""Id-only releases of a build and their reconstruction.

`openmsd-build release OUT` writes what may be redistributed without the papers' text:
DOIs per split with language and category labels, per-document content hashes, citation
edges and pairs, a sha256 per file, the source snapshot versions, stage counts and the build
configuration (`command.py`). `openmsd-build reconstruct RELEASE ...` rebuilds the text
columns from the public snapshots and verifies them against the hashes (`reconstruct.py`).
The pure functions both use are in `hashes.py`; the schemas in `schema.py`.
"""
