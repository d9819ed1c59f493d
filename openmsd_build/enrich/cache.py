"""The answer cache: a re-run calls the endpoint for nothing it already has an answer for.

Key: sha1 of `(doi, sha1 of the exact text sent, summarizer, prompt id, model id)`. The
text hash makes a changed abstract (or another `--n-tokens` for translation, which changes
what is sent) a new key; the prompt id carries a hash of the prompt's wording (`prompts`).

What is cached: every *answer* the endpoint gave (the raw text), including answers that the
checks later reject (a refusal, a non-English or empty summary: with temperature 0 the same
request gives the same answer, so paying for it twice would be waste). Transport failures
(timeouts, 5xx, 429, malformed bodies) are not answers and are not cached: the next run
asks again.

Where: one SQLite file, `OUT/_cache/enrich.sqlite` by default. It is deliberately *outside*
`OUT/enriched/`, which the stage replaces atomically on success (`core.staging`): answers
paid for by a run that later failed or was interrupted must survive it. SQLite needs a
local file, so for a `gs://` OUT pass `--cache-dir` (a local folder; copy it along with the
build if you want the cache elsewhere). Writes are serialized by a lock; WAL mode keeps a
commit per answer cheap.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass

CACHE_FILE = "enrich.sqlite"

_COLUMNS = ["key", "doi", "text_sha1", "summarizer", "prompt_id", "model_id", "answer", "refusal",
            "usage_prompt_tokens", "usage_completion_tokens", "created"]
_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    doi TEXT NOT NULL,
    text_sha1 TEXT NOT NULL,
    summarizer TEXT NOT NULL,
    prompt_id TEXT NOT NULL,
    model_id TEXT NOT NULL,
    answer TEXT NOT NULL,
    refusal TEXT,
    usage_prompt_tokens INTEGER,
    usage_completion_tokens INTEGER,
    created REAL NOT NULL
)
"""


def cache_key(doi: str, text_sha1: str, summarizer: str, prompt_id: str, model_id: str) -> str:
    """sha1 of the key tuple (JSON, so no separator can make two tuples collide)."""
    payload = json.dumps([doi, text_sha1, summarizer, prompt_id, model_id], ensure_ascii=False)
    return hashlib.sha1(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    answer: str
    refusal: str | None = None
    usage_prompt_tokens: int | None = None
    usage_completion_tokens: int | None = None


class AnswerCache:
    """A thread-safe key -> answer store in one SQLite file."""

    def __init__(self, path: str):
        from openmsd_build.core.errors import UserError

        self.path = path
        self._lock = threading.Lock()
        try:
            # a --cache-dir that is a file (or a link to nothing) raised FileExistsError here
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError as exc:
            raise UserError(f"the answer cache's folder {os.path.dirname(path) or '.'} cannot be made "
                            f"({exc.strerror or exc}: a file of that name?): pass another --cache-dir") from None
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
            with self._lock:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(_SCHEMA)
                self._db.commit()
                # a table of another shape is refused here, not at the first `put`
                columns = [row[1] for row in self._db.execute("PRAGMA table_info(answers)")]
                if columns != _COLUMNS:
                    raise sqlite3.DatabaseError(f"its answers table has the columns {columns}, not {_COLUMNS}")
        except sqlite3.Error as exc:
            raise UserError(f"the answer cache {path} cannot be used ({type(exc).__name__}: {exc}): move it aside "
                            "(its answers are asked again) or pass another --cache-dir") from None

    def get(self, key: str) -> CachedAnswer | None:
        """The cached answer, or None; a row that is not an answer (a value of another type) is
        no answer: it is asked again and replaced."""
        with self._lock:
            try:
                row = self._db.execute("SELECT answer, refusal, usage_prompt_tokens, usage_completion_tokens FROM "
                                       "answers WHERE key = ?", (key,)).fetchone()
            except sqlite3.OperationalError:  # a value that is not UTF-8 text ("Could not decode")
                return None
        if not row:
            return None
        answer, refusal, prompt, completion = row
        if not isinstance(answer, str) or not isinstance(refusal, str | None) or not all(
                n is None or isinstance(n, int) for n in (prompt, completion)):
            return None
        return CachedAnswer(answer, refusal, prompt, completion)

    def put(
        self,
        key: str,
        *,
        doi: str,
        text_sha1: str,
        summarizer: str,
        prompt_id: str,
        model_id: str,
        answer: CachedAnswer,
    ) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, doi, text_sha1, summarizer, prompt_id, model_id, answer.answer, answer.refusal,
                 answer.usage_prompt_tokens, answer.usage_completion_tokens, time.time()),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
