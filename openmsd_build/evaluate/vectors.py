"""Embedding vectors made unit length, for cosine scoring (`evaluate`, `evaluate-pools`).

A row's norm is taken after dividing the row by its largest absolute value: in float32 the
squares of components above ~1e19 overflow (the norm is infinite, the unit vector all zeros)
and those of components below ~1e-23 underflow (the norm is 0, the same zeros), and a model
whose every vector scores 0 is ranked by DOI order without a word. Scaled first, every row
that is finite and not all zeros (what `evaluate.command._checked` lets in) keeps its
direction, without a float64 copy of a million-row matrix.
"""

from __future__ import annotations

import numpy as np


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """`vectors` (rows) as float32 unit vectors; an all-zero row stays zero."""
    v = np.asarray(vectors, dtype=np.float32)
    scale = np.abs(v).max(axis=1, keepdims=True) if v.size else np.ones((len(v), 1), np.float32)
    scaled = np.divide(v, scale, out=np.zeros_like(v), where=scale > 0)
    norms = np.linalg.norm(scaled, axis=1, keepdims=True)
    return np.divide(scaled, norms, out=scaled, where=norms > 0)
