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

ROWS_AT_A_TIME = 65_536
"""Rows normalised at a time: the temporaries (absolute values, squares) are of a slice, so
the peak is the input and the output, not two more copies of a million-row matrix."""


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """`vectors` (rows) as float32 unit vectors; an all-zero row stays zero."""
    v = np.asarray(vectors, dtype=np.float32)
    unit = np.zeros_like(v)
    for start in range(0, len(v), ROWS_AT_A_TIME):
        part, out = v[start : start + ROWS_AT_A_TIME], unit[start : start + ROWS_AT_A_TIME]
        if not part.size:
            continue
        scale = np.abs(part).max(axis=1, keepdims=True)
        np.divide(part, scale, out=out, where=scale > 0)
        norms = np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
        np.divide(out, norms, out=out, where=norms > 0)
    return unit
