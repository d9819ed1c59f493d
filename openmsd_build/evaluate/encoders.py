"""Local text encoders for the evaluation: a model *folder* on disk, never downloaded.

Recognised folders (`load_encoder`):
- a sentence-transformers model (`modules.json`): needs `pip install openmsd-build[encoders]`;
- a model2vec static-embedding model (`model.safetensors` + `tokenizer.json` +
  `config.json`, no `modules.json`): needs the `model2vec` package (same extra);
- a plain static-embedding folder (`vocab.txt`, one token a line, and `vectors.npy`, one
  row per token): a text's vector is the mean of its tokens' rows (`tokenize`, with the
  text's language); a text without a known token gets the zero vector. This format needs no
  extra package, and is what the tests and bench/ make.

Hugging Face's offline switches are set before a library loads, so a folder that refers to
something missing fails instead of fetching it. Input: the paper's title and abstract
(`tasks.document_text`).
"""

from __future__ import annotations

import os

import numpy as np

from openmsd_build.core.errors import UserError, damaged
from openmsd_build.evaluate.tokenize import tokenize

BATCH = 256


def load_npy(path: str) -> np.ndarray:
    """A `.npy` matrix of real numbers (`--embeddings X.npy`, a static encoder's vectors).

    A local file is memory-mapped: numpy checks the header against the file's size before any
    data is read, so a truncated file or a header claiming more rows than the file holds is
    refused at once instead of after allocating what the header says. A file numpy cannot
    read (truncated, object dtype, not .npy), or of values that are no real numbers (complex:
    its imaginary part was dropped silently), is a `UserError` naming it."""
    try:
        if "://" in path:
            import io

            from apache_beam.io.filesystems import FileSystems

            with FileSystems.open(path) as f:
                matrix = np.load(io.BytesIO(f.read()), allow_pickle=False)
        else:
            matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise damaged(path, "is not a readable .npy matrix (truncated, an object array, or no .npy?)", exc) from None
    if matrix.dtype.kind not in "biuf":
        raise damaged(path, f"holds {matrix.dtype} values, not real numbers")
    return matrix


class StaticEncoder:
    """Mean of token vectors (the plain folder format above)."""

    def __init__(self, vocab: list[str], vectors: np.ndarray):
        if len(vocab) != vectors.shape[0]:
            raise UserError(f"static encoder: {len(vocab)} tokens but {vectors.shape[0]} vectors")
        self.index = {t: i for i, t in enumerate(vocab)}
        self.vectors = np.asarray(vectors, dtype=np.float32)

    @classmethod
    def from_folder(cls, path: str) -> StaticEncoder:
        vocab_path, vectors_path = os.path.join(path, "vocab.txt"), os.path.join(path, "vectors.npy")
        try:
            with open(vocab_path, encoding="utf-8") as f:
                vocab = [line.rstrip("\n") for line in f]
        except UnicodeDecodeError as exc:
            raise damaged(vocab_path, "is not UTF-8 text", exc) from None
        vectors = load_npy(vectors_path)
        if vectors.ndim != 2:
            raise damaged(vectors_path, f"is of shape {vectors.shape}, not one row of numbers per token")
        return cls(vocab, vectors)

    def save(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)
        vocab = sorted(self.index, key=self.index.get)
        with open(os.path.join(path, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(vocab) + "\n")
        np.save(os.path.join(path, "vectors.npy"), self.vectors)

    def encode(self, texts: list[str], languages: list[str | None]) -> np.ndarray:
        out = np.zeros((len(texts), self.vectors.shape[1]), dtype=np.float32)
        for i, (text, lang) in enumerate(zip(texts, languages, strict=True)):
            ids = [self.index[t] for t in tokenize(text, lang) if t in self.index]
            if ids:
                out[i] = self.vectors[ids].mean(axis=0)
        return out


class _LibraryEncoder:
    def __init__(self, model, kind: str):
        self.model, self.kind = model, kind

    def encode(self, texts: list[str], languages: list[str | None]) -> np.ndarray:
        del languages  # the model's own tokenizer handles every language
        if self.kind == "sentence-transformers":
            return np.asarray(self.model.encode(texts, batch_size=BATCH, show_progress_bar=False), dtype=np.float32)
        return np.asarray(self.model.encode(texts), dtype=np.float32)


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def load_encoder(path: str):
    """An encoder with `encode(texts, languages) -> matrix` from a local folder."""
    if not os.path.isdir(path):
        raise UserError(f"--encoder {path}: not a folder (models are never downloaded: give a local folder)")
    if os.path.exists(os.path.join(path, "vocab.txt")) and os.path.exists(os.path.join(path, "vectors.npy")):
        return StaticEncoder.from_folder(path)
    _offline()
    if os.path.exists(os.path.join(path, "modules.json")):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise UserError(f"--encoder {path} is a sentence-transformers folder: "
                            "pip install 'openmsd-build[encoders]'") from exc
        return _LibraryEncoder(SentenceTransformer(path, device="cpu", local_files_only=True), "sentence-transformers")
    if os.path.exists(os.path.join(path, "model.safetensors")) and os.path.exists(os.path.join(path, "tokenizer.json")):
        try:
            from model2vec import StaticModel
        except ImportError as exc:
            raise UserError(f"--encoder {path} is a model2vec folder: pip install 'openmsd-build[encoders]'") from exc
        return _LibraryEncoder(StaticModel.from_pretrained(path), "model2vec")
    raise UserError(f"--encoder {path}: no vocab.txt + vectors.npy, modules.json (sentence-transformers) or "
                    "model.safetensors + tokenizer.json (model2vec)")


def encode_corpus(encoder, texts: list[str], languages: list[str | None], batch: int = 4096) -> np.ndarray:
    """Vectors of every text, encoded in batches."""
    parts = [encoder.encode(texts[i : i + batch], languages[i : i + batch]) for i in range(0, len(texts), batch)]
    return np.concatenate(parts) if parts else np.zeros((0, 1), dtype=np.float32)
