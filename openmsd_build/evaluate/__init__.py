"""`evaluate`: MAP and nDCG@10 of IDT / ODT retrieval over whole split pools (`metrics`),
read as tasks from a build (`tasks`), with the BM25 baseline (`bm25`, `tokenize`)."""
