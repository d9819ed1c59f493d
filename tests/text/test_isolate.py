"""The isolated extractor: a hang is killed within the limit, a crash is reported, and the next
document still extracts."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import pytest

from openmsd_build.text.extract.isolate import IsolatedExtractor


@pytest.fixture(scope="module")
def extractor():
    ex = IsolatedExtractor(timeout=1.5, max_bytes=1_000_000, debug_kinds=True)
    ex.start()
    yield ex
    ex.close()


def test_hang_is_killed_within_limit_and_next_document_extracts(extractor: IsolatedExtractor) -> None:
    pid = extractor.pid
    started = time.monotonic()
    result, reason = extractor.extract("debug_sleep", b"60")
    elapsed = time.monotonic() - started
    assert (result, reason) == (None, "timeout")
    assert elapsed < 1.5 + 2.0
    assert extractor.pid is None  # killed
    result, reason = extractor.extract("debug_echo", b"abc")
    assert reason is None and result["n_bytes"] == 3 and result["pid"] != pid


@pytest.mark.parametrize("kind", ["debug_exit", "debug_abort"])
def test_crash_is_reported_and_recovery_works(extractor: IsolatedExtractor, kind: str) -> None:
    assert extractor.extract(kind, b"")[1] == "crashed"
    assert "worker died" in extractor.last_error
    result, reason = extractor.extract("html", b"<html><head><meta name='citation_title' content='After a crash'></head><body></body></html>")
    assert reason is None and result["title"] == "After a crash"


def test_errors_and_limits(extractor: IsolatedExtractor) -> None:
    assert extractor.extract("pdf", b"x" * 1_000_001) == (None, "too_large")
    assert extractor.extract("pdf", b"%PDF-1.7 not really") == (None, "parse_error")
    assert "PdfParseError" in extractor.last_error
    assert extractor.extract("debug_raise", b"bad input") == (None, "parse_error")
    assert extractor.extract("nope", b"") == (None, "unknown_kind")
    pid = extractor.pid
    assert extractor.extract("debug_allocate", b"8000") == (None, "out_of_memory")
    assert extractor.pid == pid  # a MemoryError does not cost the worker


def test_real_documents_with_url(real_samples: Path, extractor: IsolatedExtractor) -> None:
    page = (real_samples / "html" / "commonmeta-py__arxiv_1902.02534.html").read_bytes()
    result, reason = extractor.extract("html", page, url="https://arxiv.org/abs/1902.02534")
    assert reason is None and result["pdf_url"].startswith("https://arxiv.org/pdf/")
    pdf = (real_samples / "pdf" / "s2orc-doc2json__N18-3011.pdf").read_bytes()
    result, reason = extractor.extract("pdf", pdf)
    assert reason is None and "Semantic Scholar" in result["title"]


def test_lazy_and_picklable() -> None:
    ex = IsolatedExtractor(timeout=5)
    assert ex.pid is None  # nothing started by the constructor
    clone = pickle.loads(pickle.dumps(ex))
    assert clone.timeout == 5 and clone.pid is None
    result, reason = clone.extract("html", b"<html><head><title>Lazy start of a worker</title></head></html>")
    assert reason is None and result["title"] == "Lazy start of a worker"
    started = clone.pid
    assert pickle.loads(pickle.dumps(clone)).pid is None  # a running worker is not pickled
    clone.close()
    assert clone.pid is None and started is not None


def test_missing_module_is_a_clear_error() -> None:
    """A child that cannot import an extractor's module says which one (it used to be a
    bare "worker died")."""
    import pytest

    from openmsd_build.text.extract.isolate import IsolatedExtractor

    extractor = IsolatedExtractor(extractors={"html": "no_such_module_for_tests:extract"})
    try:
        with pytest.raises(RuntimeError, match="cannot import no_such_module_for_tests"):
            extractor.start()
    finally:
        extractor.close()
