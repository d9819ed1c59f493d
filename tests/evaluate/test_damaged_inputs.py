"""Unreadable embeddings, ids files and static-encoder folders are a `UserError` naming the
file (exit 2, one line), not numpy's or Arrow's traceback (exit 1): `np.load` and the Parquet
read sat outside the checks of `read_embeddings`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.core.errors import UserError
from openmsd_build.evaluate.command import read_embeddings
from openmsd_build.evaluate.encoders import StaticEncoder

DOIS = ["10.1/a", "10.1/b", "10.1/c"]


def _good(path: Path) -> None:
    np.save(path, np.arange(1, 13, dtype=np.float32).reshape(3, 4))


def _truncated(path: Path) -> None:
    _good(path)
    path.write_bytes(path.read_bytes()[:-10])


def _lying_header(path: Path) -> None:
    """A header claiming 100,000 columns over the data of 4: numpy allocated, then failed."""
    import io

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (3, 100_000)})
    path.write_bytes(header.getvalue() + np.ones((3, 4), dtype=np.float32).tobytes())


NPY_DAMAGE = {
    "object_dtype": (lambda p: np.save(p, np.array([[1, "x"]] * 3, dtype=object), allow_pickle=True),
                     "not a readable .npy"),
    "truncated": (_truncated, "not a readable .npy"),
    "lying_header": (_lying_header, "not a readable .npy"),
    "not_npy": (lambda p: p.write_bytes(b"plain text, not a matrix"), "not a readable .npy"),
    "complex": (lambda p: np.save(p, np.ones((3, 4), dtype=np.complex64)), "complex64 values, not real numbers"),
}


@pytest.fixture()
def ids(tmp_path: Path) -> Path:
    path = tmp_path / "ids.txt"
    path.write_text("\n".join(DOIS) + "\n")
    return path


@pytest.mark.parametrize("damage", sorted(NPY_DAMAGE))
def test_a_damaged_npy_is_named(tmp_path, ids, damage) -> None:
    hurt, what = NPY_DAMAGE[damage]
    path = tmp_path / "vectors.npy"
    hurt(path)
    with pytest.raises(UserError, match=f"^{path}: .*{what}"):
        read_embeddings(str(path), str(ids))


def test_a_sound_npy_still_reads(tmp_path, ids) -> None:
    path = tmp_path / "vectors.npy"
    _good(path)
    dois, matrix = read_embeddings(str(path), str(ids))
    assert dois == DOIS and matrix.dtype == np.float32 and matrix.shape == (3, 4) and matrix[2, 3] == 12


def test_ids_that_are_not_utf8_are_named(tmp_path) -> None:
    path, ids = tmp_path / "vectors.npy", tmp_path / "ids.txt"
    _good(path)
    ids.write_bytes(b"\xff\xfe" + "\n".join(DOIS).encode("utf-16-le"))
    with pytest.raises(UserError, match=f"^{ids}: is not UTF-8 text"):
        read_embeddings(str(path), str(ids))


@pytest.mark.parametrize("target", ["embeddings", "ids"])
def test_a_truncated_parquet_is_named(tmp_path, target) -> None:
    table = pa.table({"doi": DOIS, "vector": [[1.0, 2.0]] * 3})
    path = tmp_path / f"{target}.parquet"
    pq.write_table(table, path)
    path.write_bytes(path.read_bytes()[:-20])
    npy = tmp_path / "vectors.npy"
    _good(npy)
    with pytest.raises(UserError, match=f"^{path}: is not a readable Parquet file"):
        if target == "embeddings":
            read_embeddings(str(path))
        else:
            read_embeddings(str(npy), str(path))


def test_a_static_encoder_folder_with_damaged_vectors_is_named(tmp_path) -> None:
    (tmp_path / "vocab.txt").write_text("a\nb\nc\n")
    _truncated(tmp_path / "vectors.npy")
    with pytest.raises(UserError, match="vectors.npy: is not a readable .npy"):
        StaticEncoder.from_folder(str(tmp_path))
    np.save(tmp_path / "vectors.npy", np.ones(3, dtype=np.float32))
    with pytest.raises(UserError, match=r"vectors.npy: is of shape \(3,\)"):
        StaticEncoder.from_folder(str(tmp_path))
    (tmp_path / "vocab.txt").write_bytes(b"\xff\n")
    with pytest.raises(UserError, match="vocab.txt: is not UTF-8 text"):
        StaticEncoder.from_folder(str(tmp_path))
