"""A local stub of the two APIs `enrich` talks to, for the tests and the demo. NOT A MODEL.

Serves `POST /v1/chat/completions` (OpenAI-compatible) and `POST /translate`
(LibreTranslate-style) on 127.0.0.1. Answers are deterministic English text built from the
input and always start with `[stub]`, so a stub-enriched build can never be mistaken for a
real one.

Behaviours, chosen by a marker anywhere in the input text (tests put it in the abstract):

    STUB:slow       sleeps `slow_seconds` before answering (a client timeout)
    STUB:fail500    HTTP 500, every time
    STUB:429        HTTP 429 with `Retry-After: 0` on the first request for that text, then OK
    STUB:malformed  a body that is not JSON
    STUB:nonenglish a German answer
    STUB:empty      an empty answer
    STUB:refuse     an explicit refusal (`message.refusal`)

`fault_rate` (the demo's) makes that share of inputs, chosen by a hash of the text, answer
in German or with a refusal: answers the stage must reject, yet cacheable, so the demo's
second run is still all cache hits.

Run alone: `python -m openmsd_build.enrich.stub --port 0` prints its URL and serves until
interrupted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GERMAN = "Diese Arbeit untersucht die wichtigsten Ergebnisse und beschreibt die Methode ausführlich."


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def stub_answer(text: str, kind: str = "chat") -> str:
    """The deterministic English stand-in for a summary or a translation of `text`."""
    words = len(re.findall(r"\w+", text))
    what = "summary" if kind == "chat" else "translation"
    return (f"[stub] This placeholder {what} stands in for a real model output; the study described "
            f"in the input of {words} words reports its methods and main findings (ref {_digest(text)[:8]}).")


class StubServer:
    """The stub in a background thread: `with StubServer() as s: s.url`."""

    def __init__(self, port: int = 0, slow_seconds: float = 3.0, fault_rate: float = 0.0):
        self.slow_seconds = slow_seconds
        self.fault_rate = fault_rate
        self.requests: dict[str, int] = {"chat": 0, "translate": 0, "other": 0}
        self._seen_429: set[str] = set()
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def total_requests(self) -> int:
        with self._lock:
            return sum(self.requests.values())

    def start(self) -> StubServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ behaviour

    def _faulty(self, text: str) -> str | None:
        if self.fault_rate <= 0:
            return None
        u = int(_digest("fault:" + text)[:8], 16) / 0xFFFFFFFF
        if u < self.fault_rate / 2:
            return "nonenglish"
        if u < self.fault_rate:
            return "refuse"
        return None

    def _marker(self, text: str) -> str | None:
        m = re.search(r"STUB:(slow|fail500|429|malformed|nonenglish|empty|refuse)", text)
        return m.group(1) if m else self._faulty(text)

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)  # buffered: nothing is sent before end_headers
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out first (the `slow` case): nothing to answer

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                route = "chat" if self.path.endswith("/chat/completions") else (
                    "translate" if self.path.endswith("/translate") else "other")
                with stub._lock:
                    stub.requests[route] += 1
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, b'{"error": "bad JSON"}')
                    return
                if route == "chat":
                    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                    texts = [text]
                elif route == "translate":
                    q = body.get("q")
                    texts = q if isinstance(q, list) else [str(q)]
                else:
                    self._send(404, b'{"error": "no such route"}')
                    return
                markers = [stub._marker(t) for t in texts]
                joined = "\n".join(texts)
                if "slow" in markers:
                    time.sleep(stub.slow_seconds)
                if "fail500" in markers:
                    self._send(500, b'{"error": "stub: internal error"}')
                    return
                if "429" in markers:
                    with stub._lock:
                        first = joined not in stub._seen_429
                        stub._seen_429.add(joined)
                    if first:
                        self._send(429, b'{"error": "stub: slow down"}', {"Retry-After": "0"})
                        return
                if "malformed" in markers:
                    self._send(200, b'{"choices": [ this is not json')
                    return
                answers = []
                for t, m in zip(texts, markers, strict=True):
                    if m == "nonenglish":
                        answers.append(GERMAN)
                    elif m in ("empty", "refuse"):
                        answers.append("")
                    else:
                        answers.append(stub_answer(t, route))
                if route == "translate":
                    out = answers if isinstance(body.get("q"), list) else answers[0]
                    self._send(200, json.dumps({"translatedText": out}).encode("utf-8"))
                    return
                refusal = "[stub] I can't help with that." if markers[0] == "refuse" else None
                words = len(re.findall(r"\w+", texts[0]))
                payload = {
                    "id": "stub-" + _digest(texts[0])[:12],
                    "object": "chat.completion",
                    "model": body.get("model", "stub"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": answers[0], "refusal": refusal}}],
                    "usage": {"prompt_tokens": words, "completion_tokens": len(answers[0].split()),
                              "total_tokens": words + len(answers[0].split())},
                }
                self._send(200, json.dumps(payload).encode("utf-8"))

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a local stub of the chat-completions and translate APIs "
                                     "(deterministic '[stub]' answers; not a model)")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of inputs answered badly (demo)")
    args = parser.parse_args(argv)
    server = StubServer(args.port, fault_rate=args.fault_rate).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
