"""Summarizers behind one small interface, and the retry / rate-limit machinery they share.

A summarizer turns a document into the exact text it sends (`input_text`, hashed for the
cache) and a batch of such texts into one `Reply` per document (`summarize_batch`). It
never raises for a document's failure: a failure is a `Reply` with a reason code, which the
stage writes as a reject. Kinds:

- `chat`: an OpenAI-compatible `POST /v1/chat/completions` endpoint (vLLM, TGI, llama.cpp
  server, Ollama all serve it) with one of the paper's two prompts (`prompts`). The API has
  no batch call, so a batch is sent one request after another by one worker thread; the
  stage runs `--concurrency` such workers.
- `translate`: a LibreTranslate-style `POST /translate` with `q` a list (one request per
  batch and source language), translating the abstract's first N tokens into English.
- `ctranslate2`: a local CTranslate2 translation model directory (`ctranslate2` and
  `sentencepiece` are imported only when this kind is chosen; they are not dependencies).
- `none`: no enrichment (the default); calls nothing.

Failures and their reason codes (the stage's `rejected_<reason>` counters):
`timeout`, `connection_error`, `server_error` (5xx), `rate_limited` (429) — transient,
retried with exponential backoff and jitter, honouring `Retry-After` up to `--max-retry-wait`
seconds; after `--retries` retries the document is rejected with that reason, so a dead or
slow endpoint costs bounded time and never stalls the stage. `endpoint_rejected` (another
4xx), `malformed_response` (not the API's JSON shape, or an oversized body) — not retried.
A multi-document translation batch that fails for a non-transient reason is retried one
document at a time, so one bad document does not reject its neighbours. The answer checks
(refusal, empty, non-English) are the stage's (`command.check_answer`), applied to fresh
and cached answers alike.

HTTP is urllib3 (already a dependency) with one deadline per request (`--timeout`: connecting,
the status line, headers and body together, `core.deadlines`), no redirects, no automatic
retries (ours are counted), a capped body, and a shared token-bucket rate limit.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import threading
import time
from dataclasses import dataclass, field

import urllib3

from openmsd_build.core.deadlines import DeadlineHTTPConnectionPool, DeadlineHTTPSConnectionPool, attempt_until
from openmsd_build.core.errors import UserError
from openmsd_build.enrich.prompts import Prompt
from openmsd_build.enrich.text import count_tokens, truncate_tokens

KINDS = ("none", "chat", "translate", "ctranslate2")
MAX_BODY_BYTES = 4 << 20
TRANSIENT = frozenset({"timeout", "connection_error", "server_error", "rate_limited"})


@dataclass(frozen=True)
class Doc:
    doi: str
    language: str | None
    title: str | None
    abstract: str | None


@dataclass
class Reply:
    """One document's outcome: an answer (checked later) or a failure reason."""

    answer: str | None = None
    refusal: str | None = None  # the API's explicit refusal field (OpenAI `message.refusal`)
    usage_prompt_tokens: int | None = None
    usage_completion_tokens: int | None = None
    reason: str | None = None
    detail: str | None = None
    raw: str | None = None
    requests: int = 0
    retries: int = 0


class CallError(Exception):
    """One failed attempt; `transient` ones are retried."""

    def __init__(self, reason: str, detail: str, raw: str | None = None, retry_after: float | None = None):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.raw = raw
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        return self.reason in TRANSIENT


# --------------------------------------------------------------------------- rate limit, retries


class RateLimiter:
    """A token bucket shared by the worker threads: at most `rate` requests per second
    on average, bursts of `burst`. `rate <= 0` means unlimited."""

    def __init__(self, rate: float, burst: int = 1):
        self.rate = rate
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        if self.rate <= 0:
            return
        while True:
            with self._lock:
                now = time.monotonic()
                self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
                self._last = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                wait = (1 - self._tokens) / self.rate
            time.sleep(wait)


@dataclass
class RetryPolicy:
    retries: int = 3
    backoff: float = 0.5  # first wait; doubles per retry, with +-50% jitter
    max_wait: float = 30.0  # a Retry-After above this is not waited for: the document is rejected


def with_retries(attempt, policy: RetryPolicy, limiter: RateLimiter) -> tuple[object, int, int]:
    """Call `attempt()` until it returns or fails for good. Returns (value, requests,
    retries); raises the last `CallError` (with `.requests` / `.retries` set)."""
    requests = 0
    for n in range(policy.retries + 1):
        limiter.acquire()
        requests += 1
        try:
            return attempt(), requests, n
        except CallError as exc:
            exc.requests, exc.retries = requests, n  # type: ignore[attr-defined]
            if not exc.transient or n == policy.retries:
                raise
            if exc.retry_after is not None:
                if exc.retry_after > policy.max_wait:
                    exc.detail += f" (Retry-After {exc.retry_after:g}s exceeds --max-retry-wait {policy.max_wait:g}s)"
                    raise
                wait = exc.retry_after
            else:
                wait = min(policy.max_wait, policy.backoff * 2**n * random.uniform(0.5, 1.5))
            time.sleep(wait)
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- HTTP


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


class Http:
    """JSON POSTs with timeouts and our own error classes (see the module docstring)."""

    def __init__(self, timeout: float, concurrency: int, headers: dict[str, str] | None = None):
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        self.pool = urllib3.PoolManager(
            num_pools=4,
            maxsize=max(1, concurrency),
            retries=False,
            timeout=urllib3.Timeout(connect=min(10.0, timeout), read=timeout),
        )
        # connections under each request's deadline (`core.deadlines`): a trickled status
        # line or header is cut at the deadline as a trickled body is
        self.pool.pool_classes_by_scheme = {"http": DeadlineHTTPConnectionPool, "https": DeadlineHTTPSConnectionPool}

    def post_json(self, url: str, body: dict) -> dict:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        deadline = time.monotonic() + self.timeout
        with attempt_until(deadline) as attempt:
            try:
                resp = self.pool.request("POST", url, body=data, headers=self.headers, redirect=False,
                                         preload_content=False)
                payload = self._body(resp, deadline)
            except urllib3.exceptions.NewConnectionError as exc:  # a TimeoutError subclass to urllib3, but refused
                raise CallError("connection_error", f"cannot connect to {url}: {exc.__class__.__name__}") from None
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                if attempt.over() or isinstance(exc, urllib3.exceptions.TimeoutError):  # the watchdog cut it
                    raise CallError("timeout", f"no answer within {self.timeout:g}s ({type(exc).__name__})") from None
                raise CallError("connection_error", f"{type(exc).__name__}: {exc}") from None
            if attempt.expired:  # cut by the watchdog while reading: what was read is not the whole answer
                raise CallError("timeout", f"no whole answer within {self.timeout:g}s (it came too slowly)")
        text = payload[:2000].decode("utf-8", errors="replace")
        if resp.status == 429:
            raise CallError("rate_limited", "HTTP 429", text, _retry_after(resp.headers.get("Retry-After")))
        if resp.status >= 500:
            raise CallError("server_error", f"HTTP {resp.status}", text, _retry_after(resp.headers.get("Retry-After")))
        if resp.status != 200:
            raise CallError("endpoint_rejected", f"HTTP {resp.status}", text)
        if len(payload) > MAX_BODY_BYTES:
            raise CallError("malformed_response", f"body larger than {MAX_BODY_BYTES} bytes", text)
        try:
            parsed = json.loads(payload.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            # ValueError: not UTF-8, not JSON; RecursionError: nested deeper than the parser
            # goes (a few KB of `[[[[...`). Either is this answer's fault: one malformed reply
            raise CallError("malformed_response", f"not JSON: {type(exc).__name__}: {exc}"[:300], text) from None
        if not isinstance(parsed, dict):
            raise CallError("malformed_response", "JSON body is not an object", text)
        return parsed

    def _body(self, resp, deadline: float) -> bytes:
        """The answer's body, at most `MAX_BODY_BYTES` + 1 bytes, read by the pieces the socket
        has (`read1`), each read given only the time left: `timeout` bounds the whole request,
        status line, headers and body (the watchdog of `core.deadlines` cuts a read still
        waiting at the deadline), so an endpoint that trickles a byte at a time is a timeout
        too (it held a request for minutes)."""
        pieces: list[bytes] = []
        size = 0
        sock = getattr(getattr(resp, "connection", None), "sock", None)
        try:
            while size <= MAX_BODY_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    resp.close()  # the rest is never read: the connection is not reused
                    raise CallError("timeout", f"no whole answer within {self.timeout:g}s (it came too slowly)")
                if sock is not None:
                    sock.settimeout(left)
                piece = resp.read1(min(1 << 16, MAX_BODY_BYTES + 1 - size))
                if not piece:
                    break
                pieces.append(piece)
                size += len(piece)
        finally:
            resp.release_conn()
        return b"".join(pieces)


def _excerpt(data: object) -> str:
    """The start of an answer for a reject row; never raises (an answer nested past the
    encoder's limit is shown by its type)."""
    try:
        return json.dumps(data)[:2000]
    except (ValueError, TypeError, RecursionError):
        return f"<{type(data).__name__} nested too deeply to show>"


def endpoint_url(base: str, path: str) -> str:
    """`base` may be the server root, the API base (`.../v1`) or the full route."""
    base = base.rstrip("/")
    if base.endswith(path):
        return base
    if path.startswith("/v1/") and base.endswith("/v1"):
        return base + path[3:]
    return base + path


# --------------------------------------------------------------------------- the interface


class Summarizer:
    """The interface (see the module docstring). Subclasses set `kind`, `model_id`,
    `prompt_id`, `batch_size` and implement `input_text` and `summarize_batch`."""

    kind = "none"
    model_id = ""
    prompt_id = ""
    batch_size = 1
    endpoint: str | None = None
    fixed_input_tokens = 0  # tokens sent with every request besides `input_text` (a system prompt)

    def input_text(self, doc: Doc) -> str | None:
        """The exact text sent for `doc` (its hash is part of the cache key); None when the
        document has nothing to summarize."""
        raise NotImplementedError

    def summarize_batch(self, docs: list[Doc], texts: list[str]) -> list[Reply]:
        raise NotImplementedError

    def describe(self) -> dict:
        return {"summarizer": self.kind, "model_id": self.model_id, "prompt_id": self.prompt_id,
                "endpoint": self.endpoint}


class NoneSummarizer(Summarizer):
    """No enrichment: every non-English document is counted `not_summarized`."""

    def input_text(self, doc: Doc) -> str | None:
        return None

    def summarize_batch(self, docs: list[Doc], texts: list[str]) -> list[Reply]:
        return [Reply(reason="not_summarized") for _ in docs]


def _failed(exc: CallError) -> Reply:
    return Reply(reason=exc.reason, detail=exc.detail, raw=exc.raw, requests=getattr(exc, "requests", 1),
                 retries=getattr(exc, "retries", 0))


class ChatSummarizer(Summarizer):
    """OpenAI-compatible chat completions with one of the paper's prompts, temperature 0."""

    kind = "chat"

    def __init__(self, endpoint: str, model: str, prompt: Prompt, http: Http, policy: RetryPolicy,
                 limiter: RateLimiter, batch_size: int = 8):
        self.endpoint = endpoint
        self.url = endpoint_url(endpoint, "/v1/chat/completions")
        self.model_id = model
        self.prompt = prompt
        self.prompt_id = prompt.id
        self.fixed_input_tokens = count_tokens(prompt.system)
        self.http, self.policy, self.limiter = http, policy, limiter
        self.batch_size = batch_size

    def input_text(self, doc: Doc) -> str | None:
        if not (doc.title or "").strip() and not (doc.abstract or "").strip():
            return None
        return self.prompt.user_message(doc.title, doc.abstract)

    def _attempt(self, text: str) -> Reply:
        body = {
            "model": self.model_id,
            "messages": [{"role": "system", "content": self.prompt.system}, {"role": "user", "content": text}],
            "temperature": 0,
            "max_tokens": self.prompt.max_new_tokens,
            "stream": False,
        }
        data = self.http.post_json(self.url, body)
        try:
            choice = data["choices"][0]
            message = choice["message"]
            content = message.get("content")
            refusal = message.get("refusal")
            if content is not None and not isinstance(content, str):
                raise TypeError("content is not a string")
            if refusal is not None and not isinstance(refusal, str):
                raise TypeError("refusal is not a string")
            if not all(_is_text(t) for t in (content, refusal) if t):
                raise ValueError("the answer holds a lone surrogate escape (valid JSON, not text)")
        except (KeyError, IndexError, TypeError, AttributeError, ValueError, RecursionError) as exc:
            raise CallError("malformed_response", f"no choices[0].message.content ({exc})"[:300],
                            _excerpt(data)) from None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Reply(answer=content or "", refusal=refusal if isinstance(refusal, str) and refusal else None,
                     usage_prompt_tokens=_int(usage.get("prompt_tokens")),
                     usage_completion_tokens=_int(usage.get("completion_tokens")))

    def summarize_batch(self, docs: list[Doc], texts: list[str]) -> list[Reply]:
        replies = []
        for text in texts:
            try:
                reply, requests, retries = with_retries(lambda t=text: self._attempt(t), self.policy, self.limiter)
                reply.requests, reply.retries = requests, retries  # type: ignore[union-attr]
                replies.append(reply)
            except CallError as exc:
                replies.append(_failed(exc))
        return replies


def _is_text(value: str) -> bool:
    """Whether `value` is text UTF-8 can hold: JSON's `\\ud800` escapes decode to lone
    surrogates, which stopped the stage when the answer was cached."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


MAX_USAGE_TOKENS = 1 << 31
"""A usage count an endpoint reports is kept when 0 <= n < this: a negative or astronomic one
(10**20 overflowed the cache's SQLite integer and stopped the stage) is no count."""


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_USAGE_TOKENS:
        return value
    return None


def _source_language(doc: Doc) -> str:
    return doc.language if doc.language and doc.language != "und" else "auto"


class TranslateSummarizer(Summarizer):
    """LibreTranslate-style `POST /translate`: the abstract's first `n_tokens` tokens
    translated into English (one request per batch and source language)."""

    kind = "translate"

    def __init__(self, endpoint: str, n_tokens: int, http: Http, policy: RetryPolicy, limiter: RateLimiter,
                 model: str | None = None, api_key: str | None = None, batch_size: int = 16):
        self.endpoint = endpoint
        self.url = endpoint_url(endpoint, "/translate")
        self.n_tokens = n_tokens
        self.model_id = model or "libretranslate"
        self.prompt_id = f"translate-top{n_tokens}"
        self.http, self.policy, self.limiter = http, policy, limiter
        self.api_key = api_key
        self.batch_size = batch_size

    def input_text(self, doc: Doc) -> str | None:
        return truncate_tokens(doc.abstract, self.n_tokens) or None

    def _attempt(self, source: str, texts: list[str]) -> list[str]:
        body: dict = {"q": texts, "source": source, "target": "en", "format": "text"}
        if self.api_key:
            body["api_key"] = self.api_key
        data = self.http.post_json(self.url, body)
        out = data.get("translatedText")
        if isinstance(out, str) and len(texts) == 1:
            out = [out]
        if not isinstance(out, list) or len(out) != len(texts) or not all(isinstance(t, str) and _is_text(t)
                                                                          for t in out):
            raise CallError("malformed_response", f"translatedText is not a list of {len(texts)} strings",
                            _excerpt(data))
        return out

    def _group(self, source: str, texts: list[str]) -> list[Reply]:
        try:
            answers, requests, retries = with_retries(lambda: self._attempt(source, texts), self.policy, self.limiter)
        except CallError as exc:
            if len(texts) > 1 and not exc.transient:
                # one bad document must not reject its batch: ask for each alone
                replies = [r for t in texts for r in self._group(source, [t])]
                replies[0].requests += getattr(exc, "requests", 1)
                return replies
            return [_failed(exc) for _ in texts]
        replies = [Reply(answer=a) for a in answers]  # type: ignore[union-attr]
        replies[0].requests, replies[0].retries = requests, retries  # a batch's requests, counted once
        return replies

    def summarize_batch(self, docs: list[Doc], texts: list[str]) -> list[Reply]:
        replies: list[Reply | None] = [None] * len(docs)
        groups: dict[str, list[int]] = {}
        for i, d in enumerate(docs):
            groups.setdefault(_source_language(d), []).append(i)
        for source, idx in groups.items():
            for i, r in zip(idx, self._group(source, [texts[i] for i in idx]), strict=True):
                replies[i] = r
        return [r for r in replies if r is not None]


@dataclass
class CTranslate2Summarizer(Summarizer):
    """A local CTranslate2 translation model (e.g. an OPUS-MT mul-en, M2M-100 or NLLB
    conversion). Tokenized with the directory's SentencePiece model(s); `source_prefix`
    (a format like `__{lang}__`) and `target_prefix` (`__en__`, `eng_Latn`) serve the
    multilingual models that need language tokens."""

    model_dir: str
    n_tokens: int
    source_prefix: str = ""
    target_prefix: str = ""
    device: str = "cpu"
    batch_size: int = 16
    kind: str = "ctranslate2"
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        try:
            ct2 = importlib.import_module("ctranslate2")
            spm = importlib.import_module("sentencepiece")
        except ModuleNotFoundError as exc:
            raise UserError(
                f"--summarizer ctranslate2 needs the `{exc.name}` package, which is not installed "
                "(it is optional): pip install ctranslate2 sentencepiece. Nothing is downloaded at run time: "
                "convert a model beforehand (ct2-transformers-converter) and pass its folder with --ct2-model."
            ) from None
        if not os.path.isfile(os.path.join(self.model_dir, "model.bin")):
            raise UserError(f"--ct2-model {self.model_dir}: no model.bin (not a CTranslate2 model folder)")
        names = ("source.spm", "sentencepiece.bpe.model", "spm.model", "sentencepiece.model")
        src = next((os.path.join(self.model_dir, n) for n in names if os.path.isfile(os.path.join(self.model_dir, n))),
                   None)
        if src is None:
            raise UserError(f"--ct2-model {self.model_dir}: no SentencePiece model ({', '.join(names)})")
        tgt = os.path.join(self.model_dir, "target.spm")
        self._src = spm.SentencePieceProcessor(model_file=src)
        self._tgt = spm.SentencePieceProcessor(model_file=tgt if os.path.isfile(tgt) else src)
        self._translator = ct2.Translator(self.model_dir, device=self.device)
        self.model_id = f"ct2:{os.path.basename(os.path.normpath(self.model_dir))}"
        self.prompt_id = f"translate-top{self.n_tokens}"
        self.endpoint = None

    def input_text(self, doc: Doc) -> str | None:
        return truncate_tokens(doc.abstract, self.n_tokens) or None

    def summarize_batch(self, docs: list[Doc], texts: list[str]) -> list[Reply]:
        batch = []
        for d, t in zip(docs, texts, strict=True):
            tokens = self._src.encode(t, out_type=str)
            if self.source_prefix:
                tokens = [self.source_prefix.format(lang=_source_language(d)), *tokens]
            batch.append(tokens)
        prefix = [[self.target_prefix]] * len(batch) if self.target_prefix else None
        try:
            with self._lock:  # one model; CTranslate2 parallelizes inside a batch
                results = self._translator.translate_batch(batch, target_prefix=prefix)
        except Exception as exc:  # noqa: BLE001 - a model failure is each document's reject
            return [Reply(reason="model_error", detail=f"{type(exc).__name__}: {exc}") for _ in docs]
        out = []
        for r in results:
            tokens = [t for t in r.hypotheses[0] if t != self.target_prefix]
            out.append(Reply(answer=self._tgt.decode(tokens)))
        return out
