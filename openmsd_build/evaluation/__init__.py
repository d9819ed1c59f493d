"""Evaluation and training exports of a build (issue 9).

- `metrics`    pure ranking metrics (AP / MAP, nDCG@k) with a documented tie rule;
- `tokenize`   per-language tokenization for the lexical baseline (CJK character bigrams);
- `bm25`       the BM25 baseline (bm25s) scoring a whole split pool;
- `tasks`      a split's retrieval tasks (pool, relevance per relation) read from a build;
- `evaluate`   `openmsd-build evaluate`: MAP and nDCG@10 per relation and language class;
- `trainer`    (anchor, positive[, negative]) tables for training;
- `hf_dataset` the Hugging Face datasets layout and dataset card;
- `export`     `openmsd-build export`: BEIR JSONL, MTEB Parquet, trainer Parquet, card.
"""
