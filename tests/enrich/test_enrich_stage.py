"""The `enrich` stage against a stub server on 127.0.0.1: reconciliation, rejects with
reasons (slow, 500, 429 + Retry-After, malformed, non-English, empty, refusal), the cache
(a second run makes no request), the enriched text format and the token cut."""

from __future__ import annotations

import argparse
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.core.textclean import count_tokens
from openmsd_build.enrich import command, enriched_dir
from openmsd_build.enrich.cache import cache_key
from openmsd_build.enrich.prompts import PROMPTS
from openmsd_build.enrich.stub import StubServer
from openmsd_build.enrich.summarizers import (
    ChatSummarizer,
    CTranslate2Summarizer,
    Http,
    NoneSummarizer,
    RateLimiter,
    RetryPolicy,
    TranslateSummarizer,
)
from openmsd_build.enrich.text import enriched_text, truncate_tokens
from openmsd_build.schemas import tables

GERMAN = ("Wir untersuchen die Wirkung von Schlafqualität auf die psychische Gesundheit von Studierenden "
          "und finden einen deutlichen Zusammenhang in einer großen Stichprobe.")
FRENCH = ("Nous étudions l'effet de la qualité du sommeil sur la santé mentale des étudiants et trouvons "
          "une association nette dans un large échantillon.")

# doi, language, title, abstract — the marker decides the stub's behaviour
DOCS = [
    ("10.1/en1", "en", "Sleep and mental health", "We study sleep quality and mental health in students."),
    ("10.1/en2", "en", "Protein folding", "Neural networks fold proteins."),
    ("10.1/ok1", "de", "Schlaf und Gesundheit", GERMAN),
    ("10.1/ok2", "fr", "Sommeil et santé", FRENCH),
    ("10.1/ok3", "zh", "睡眠质量与心理健康", "我们研究睡眠质量对大学生心理健康的影响，发现显著关联。"),
    ("10.1/ok4", None, "Ohne Sprache", GERMAN),
    ("10.1/r429", "de", "Zweimal fragen", GERMAN + " STUB:429"),
    ("10.1/slow", "de", "Langsam", GERMAN + " STUB:slow"),
    ("10.1/f500", "de", "Fehler", GERMAN + " STUB:fail500"),
    ("10.1/malf", "fr", "Cassé", FRENCH + " STUB:malformed"),
    ("10.1/nonen", "fr", "Pas anglais", FRENCH + " STUB:nonenglish"),
    ("10.1/empty", "es", "Vacío", "Estudiamos el sueño. STUB:empty"),
    ("10.1/refuse", "es", "Rechazo", "Estudiamos el sueño. STUB:refuse"),
    ("10.1/notext", "ja", None, None),
]
EXPECTED_REJECTS = {
    "10.1/slow": "timeout", "10.1/f500": "server_error", "10.1/malf": "malformed_response",
    "10.1/nonen": "non_english_output", "10.1/empty": "empty_output", "10.1/refuse": "refusal",
    "10.1/notext": "no_text",
}


def write_documents(out: str, docs=DOCS) -> None:
    rows = [{"doi": d, "language": lg, "title": t, "abstract": a, "text_source": "test"} for d, lg, t, a in docs]
    parquet_io.write_table(pa.Table.from_pylist(rows, schema=tables.DOCUMENTS),
                           parquet_io.part_path(layout.documents_dir(out), 0, 1))


@pytest.fixture()
def stub():
    with StubServer(slow_seconds=2.0) as server:
        yield server


def chat(url: str, timeout: float = 0.5, retries: int = 1) -> ChatSummarizer:
    return ChatSummarizer(url, "stub-model", PROMPTS["summary30"], Http(timeout, 4),
                          RetryPolicy(retries=retries, backoff=0.01, max_wait=1.0), RateLimiter(0), batch_size=3)


def translate(url: str, n: int = 64) -> TranslateSummarizer:
    return TranslateSummarizer(url, n, Http(0.5, 4), RetryPolicy(retries=1, backoff=0.01, max_wait=1.0),
                               RateLimiter(0), batch_size=4)


def rejects_of(out: str) -> dict[str, str]:
    t = parquet_io.read_table(layout.rejects_dir(out, "enrich"))
    return dict(zip(t.column("key").to_pylist(), t.column("reason").to_pylist(), strict=True))


def test_chat_reconciles_rejects_with_reasons_and_second_run_is_all_cache_hits(tmp_path, stub):
    out = str(tmp_path / "build")
    write_documents(out)
    stats = command.run_enrich(out, chat(stub.url), max_tokens=64, concurrency=4)  # a stall: the test's timeout
    c = stats["counts"]
    assert command.check_counts(c) == []
    assert c["documents_read"] == len(DOCS)
    assert c["english_skipped"] == 2
    assert c["non_english"] == len(DOCS) - 2 == c["enriched"] + c["rejected"]
    assert rejects_of(out) == EXPECTED_REJECTS
    assert c["retries"] >= 2  # the 429 (Retry-After: 0) and the 500s / timeout were retried
    enriched = parquet_io.read_table(enriched_dir(out)).to_pylist()
    assert sorted(r["doi"] for r in enriched) == ["10.1/ok1", "10.1/ok2", "10.1/ok3", "10.1/ok4", "10.1/r429"]
    row = next(r for r in enriched if r["doi"] == "10.1/ok1")
    assert row["summary"].startswith("[stub]") and row["summarizer"] == "chat" and row["model_id"] == "stub-model"
    assert row["prompt_id"] == PROMPTS["summary30"].id and row["n_tokens"] == count_tokens(row["summary"]) <= 64
    assert row["text"] == f"Title: Schlaf und Gesundheit. Abstract: ({row['summary']}) {GERMAN}"
    assert pq.read_schema(parquet_io.list_parts(enriched_dir(out))[0]).equals(tables.ENRICHED)
    assert pq.ParquetFile(parquet_io.list_parts(enriched_dir(out))[0]).metadata.row_group(0).column(0).compression \
        == "ZSTD"

    # the failed transports are not cached: take the faulty documents out and re-run
    write_documents(out, [d for d in DOCS if d[0] not in ("10.1/slow", "10.1/f500", "10.1/malf")])
    before = stub.total_requests
    again = command.run_enrich(out, chat(stub.url), max_tokens=64, concurrency=4)
    c2 = again["counts"]
    assert stub.total_requests == before and c2["requests"] == 0
    assert again["cache_hit_rate"] == 1.0 and c2["cache_misses"] == 0
    assert c2["cache_hits"] == c2["non_english"] - c2["rejected_no_text"]
    assert c2["enriched"] == 5 and command.check_counts(c2) == []


def test_translate_batches_by_language_and_isolates_a_malformed_batch(tmp_path, stub):
    out = str(tmp_path / "build")
    docs = [d for d in DOCS if d[0] not in ("10.1/slow", "10.1/f500")]
    docs += [(f"10.1/de{i}", "de", f"Titel {i}", f"{GERMAN} Nummer {i}.") for i in range(8)]
    write_documents(out, docs)
    stats = command.run_enrich(out, translate(stub.url, 64), max_tokens=64, concurrency=2)
    c = stats["counts"]
    assert command.check_counts(c) == []
    rejects = rejects_of(out)
    # malformed hits the whole (fr) batch once, then each document alone: only its own is rejected
    assert rejects["10.1/malf"] == "malformed_response" and "10.1/ok2" not in rejects
    assert rejects["10.1/notext"] == "no_text"
    enriched = {r["doi"]: r for r in parquet_io.read_table(enriched_dir(out)).to_pylist()}
    assert {"10.1/ok1", "10.1/ok2", "10.1/ok3", "10.1/ok4"} <= set(enriched)
    assert enriched["10.1/ok1"]["prompt_id"] == "translate-top64"
    assert {f"10.1/de{i}" for i in range(8)} <= set(enriched)
    assert stub.requests["translate"] < c["non_english"] - 4  # batched: 8+ German documents in 2-3 requests


def test_none_summarizer_enriches_nothing_and_calls_nothing(tmp_path):
    out = str(tmp_path / "build")
    write_documents(out)
    stats = command.run_enrich(out, NoneSummarizer())
    c = stats["counts"]
    assert c["not_summarized"] == c["non_english"] == len(DOCS) - 2 and c["enriched"] == 0
    assert command.check_counts(c) == []
    assert parquet_io.read_table(enriched_dir(out)).num_rows == 0


def test_retry_after_longer_than_allowed_is_a_reject_not_a_wait(tmp_path, serve_http):
    from http.server import BaseHTTPRequestHandler

    class Busy(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(429)
            self.send_header("Retry-After", "3600")
            self.send_header("Content-Length", "0")
            self.end_headers()

    base = serve_http(Busy)
    out = str(tmp_path / "build")
    write_documents(out, DOCS[2:4])
    # Retry-After: 3600 is not waited for (that would run into the per-test timeout)
    stats = command.run_enrich(out, chat(f"{base}/v1", retries=3))
    assert stats["counts"]["rejected_rate_limited"] == 2


def test_cli_demo_stub_and_user_errors(tmp_path, capsys):
    from openmsd_build.cli import main

    out = str(tmp_path / "build")
    write_documents(out, DOCS[:6])
    assert main(["enrich", "--out", out, "--demo-stub"]) == 0
    first = capsys.readouterr()
    assert "STUB" in first.err and "4 non-English = 4 enriched + 0 rejected" in first.out
    assert main(["enrich", "--out", out, "--demo-stub"]) == 0
    assert "cache hits 4/4 documents with text to send (100%); 0 requests" in capsys.readouterr().out
    assert main(["enrich", "--out", out, "--summarizer", "chat"]) == 2
    assert "--endpoint" in capsys.readouterr().err
    assert main(["enrich", "--out", out, "--summarizer", "ctranslate2", "--ct2-model", str(tmp_path)]) == 2


def test_chat_and_translate_summaries_count_cache_hits_over_the_same_thing(tmp_path, capsys):
    """On the demo, chat's summary said "cache hits 764/764" and translate's "761/761" on the
    same documents, two bare fractions that read as different counts: translation sends only
    the abstract, so the papers with a title and no abstract are `no_text` for it and never
    looked up. Both count the documents with text to send, the summary line says so, and the
    stage checks that identity (`check_counts`) for every summarizer."""
    from openmsd_build.cli import main

    out = str(tmp_path / "build")
    title_only = ("10.1/title-only", "de", "Schlafqualität und psychische Gesundheit von Studierenden", None)
    write_documents(out, [*DOCS[:6], title_only])  # 2 English, 4 non-English with abstracts, 1 without
    said = {}
    for summarizer, sent in (("chat", 5), ("translate", 4)):
        for run in range(2):
            assert main(["enrich", "--out", out, "--demo-stub", "--summarizer", summarizer]) == 0
            line = capsys.readouterr().out
            hits = sent if run else 0
            assert f"cache hits {hits}/{sent} documents with text to send ({hits / sent:.0%})" in line, line
        c = json.loads(open(layout.stats_path(out, "enrich")).read())["counts"]
        said[summarizer] = (c["non_english"], c.get("rejected_no_text", 0), c["cache_hits"] + c["cache_misses"])
        assert command.check_counts(c) == []
        assert command.check_counts({**c, "cache_misses": 1}) == [
            "cache_hits + cache_misses != non_english - not_summarized - rejected_no_text"]
    assert said == {"chat": (5, 0, 5), "translate": (5, 1, 4)}


def test_demo_stub_answers_are_never_a_real_models(tmp_path, capsys, stub):
    """`--demo-stub --model M` and then a real endpoint with `--model M`: the stub's
    placeholders are cached under a model id of their own, so the second run asks the
    endpoint (it took all 4 placeholders from the cache as M's answers)."""
    from openmsd_build.cli import main

    out = str(tmp_path / "build")
    write_documents(out, DOCS[:6])
    model = "Qwen/Qwen2.5-7B-Instruct"
    assert main(["enrich", "--out", out, "--demo-stub", "--model", model]) == 0
    capsys.readouterr()
    assert main(["enrich", "--out", out, "--summarizer", "chat", "--endpoint", stub.url, "--model", model]) == 0
    assert "cache hits 0/4 documents with text to send (0%)" in capsys.readouterr().out


def test_ctranslate2_missing_is_a_clear_user_error(tmp_path):
    import importlib.util

    if importlib.util.find_spec("ctranslate2") is not None:
        pytest.skip("ctranslate2 is installed")
    with pytest.raises(UserError, match="ctranslate2"):
        CTranslate2Summarizer(str(tmp_path), 64)


def test_cache_key_covers_every_part():
    base = ("10.1/a", "h", "chat", "p", "m")
    keys = {cache_key(*base)}
    for i in range(5):
        changed = list(base)
        changed[i] += "x"
        keys.add(cache_key(*changed))
    assert len(keys) == 6


def test_remote_out_needs_a_local_cache_dir(tmp_path):
    with pytest.raises(UserError, match="--cache-dir"):
        command.cache_path("gs://bucket/build", None)
    assert command.cache_path("gs://bucket/build", str(tmp_path)).startswith(str(tmp_path))


def test_cache_dir_in_a_replaced_folder_is_refused(tmp_path, stub):
    """A cache inside OUT/enriched/ (or the stage's rejects) was deleted by every run's swap:
    the second run asked the endpoint again for every paper (0 cache hits)."""
    out = str(tmp_path / "build")
    write_documents(out, [d for d in DOCS if d[0] not in ("10.1/slow", "10.1/f500", "10.1/malf")])  # all cached
    for inner in ("enriched/cache", "enriched", "rejects/enrich/c"):
        with pytest.raises(UserError, match="replaces"):
            command.run_enrich(out, chat(stub.url), cache_dir=str(tmp_path / "build" / inner))
    assert not (tmp_path / "build" / "enriched").exists()  # refused before anything ran
    beside = str(tmp_path / "build" / "cache")  # in OUT, outside what the stage replaces: kept
    command.run_enrich(out, chat(stub.url), cache_dir=beside)
    second = command.run_enrich(out, chat(stub.url), cache_dir=beside)
    assert second["counts"]["requests"] == 0 and second["counts"]["cache_hits"] > 0


def test_make_summarizer_requires_model_for_chat():
    args = argparse.Namespace(summarizer="chat", endpoint="http://127.0.0.1:1/v1", model=None, n_tokens=64,
                              api_key_env="", concurrency=1, retries=0, timeout=1.0, max_retry_wait=1.0, rate=0.0,
                              batch_size=None, prompt="summary30")
    with pytest.raises(UserError, match="--model"):
        command.make_summarizer(args)


def test_enriched_text_format():
    assert enriched_text("Über Schlaf.", "Wir untersuchen.", "We study sleep.") == \
        "Title: Über Schlaf. Abstract: (We study sleep.) Wir untersuchen."
    assert enriched_text("A title", "An abstract.", None) == "Title: A title. Abstract: An abstract."
    assert enriched_text(None, "  Text  with\nbreaks ", "S") == "Title: . Abstract: (S) Text with breaks"


@pytest.mark.parametrize("n", [64, 128])
def test_truncation_to_the_papers_token_cuts(n):
    latin = " ".join(f"word{i}," for i in range(300))
    cjk = "睡眠质量与心理健康" * 40
    mixed = "DNA 修复 mechanism 和 cell-cycle 调控 " * 40
    for text in (latin, cjk, mixed):
        cut = truncate_tokens(text, n)
        assert count_tokens(cut) == n
        assert text.replace("\n", " ").startswith(cut)
    short = "only five tokens are here"
    assert truncate_tokens(short, n) == short
    assert truncate_tokens(latin, n).endswith(f"word{n - 1}")


def test_enriched_summaries_of_an_earlier_text_stage_are_refused(tmp_path, stub):
    """enrich recorded nothing of the text stage it read, so after text was rebuilt
    `--text enriched` (evaluate, export) went on using summaries of the earlier documents."""
    from openmsd_build.evaluate.tasks import load_summaries

    out = tmp_path / "build"
    write_documents(str(out))
    (out / "_stats").mkdir(exist_ok=True)
    (out / "_stats" / "text.json").write_text(json.dumps({"stage": "text", "counts": {"documents.kept": 7}}))
    command.run_enrich(str(out), chat(stub.url))
    assert load_summaries(str(out))
    (out / "_stats" / "text.json").write_text(json.dumps({"stage": "text", "counts": {"documents.kept": 8}}))
    with pytest.raises(UserError, match="enriched is stale: the text stage was rebuilt after enrich ran"):
        load_summaries(str(out))
    command.run_enrich(str(out), chat(stub.url))
    assert load_summaries(str(out))


def test_a_refused_connection_is_a_connection_error_not_a_timeout():
    """An endpoint that refuses at once (nothing listening) was counted `timeout` with "no
    answer within 60s": urllib3 makes its refusal a subclass of its timeout error."""
    import socket

    from openmsd_build.enrich.summarizers import CallError

    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(CallError) as caught:
        Http(timeout=60.0, concurrency=1).post_json(f"http://127.0.0.1:{port}/v1/chat/completions", {})
    assert caught.value.reason == "connection_error" and "cannot connect" in caught.value.detail


@pytest.mark.parametrize("trickled", ["body", "headers"])
def test_an_answer_that_trickles_is_a_timeout(serve_http, trickled):
    """`--timeout` bounded each socket read, not the answer: an endpoint sending a valid
    answer a byte every 0.2 s held each request for about a minute, whether it trickled the
    body or the status line and headers (each read of them had the whole timeout to itself).
    The timeout is now the whole request's."""
    import socket
    import time as clock
    from http.server import BaseHTTPRequestHandler

    from openmsd_build.enrich.summarizers import CallError

    answer = json.dumps({"choices": [{"message": {"content": "x" * 200}}]}).encode()
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % len(answer)
            + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 20) for i in range(20)) + b"\r\n")
    sent_at_once, trickle = (head, answer) if trickled == "body" else (b"", head + answer)

    class Trickle(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            try:
                self.wfile.write(sent_at_once)
                for byte in trickle:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    clock.sleep(0.2)
            except OSError:
                pass  # the client gave up: what the test wants
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    base = serve_http(Trickle)
    started = clock.monotonic()
    with pytest.raises(CallError) as caught:
        Http(timeout=1.5, concurrency=1).post_json(f"{base}/v1/chat/completions", {})
    assert caught.value.reason == "timeout" and clock.monotonic() - started < 6


def test_hostile_answers_are_rejects_not_crashes(tmp_path, serve_http):
    """An answer with a lone surrogate escape (valid JSON) or a usage count of 10**20 stopped
    the whole stage when it was cached (UnicodeEncodeError, SQLite OverflowError); a negative
    count was summed into the stats; a refusal that is an object was ignored; an endpoint
    echoing the prompt back had its answers taken for English summaries."""
    from http.server import BaseHTTPRequestHandler

    text = "This study shows that the method works well for the measured samples in the field."
    modes = {"10.1/ok1": "surrogate", "10.1/ok2": "usage", "10.1/ok3": "negative", "10.1/ok4": "refusal",
             "10.1/r429": "echo", "10.1/f500": "fine"}

    class Hostile(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):  # noqa: N802
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            user = req["messages"][1]["content"]
            mode = next(m for doi, m in modes.items() if f"Title: {dict((d, t) for d, _, t, _ in DOCS)[doi]}\n" in user)
            message: dict = {"role": "assistant", "content": text}
            usage: dict = {"prompt_tokens": 10, "completion_tokens": 5}
            if mode == "surrogate":
                message["content"] = "\ud800 " + text
            elif mode == "usage":
                usage = {"prompt_tokens": 10**20, "completion_tokens": 2**63}
            elif mode == "negative":
                usage = {"prompt_tokens": -1000, "completion_tokens": -5}
            elif mode == "refusal":
                message["refusal"] = {"reason": "policy"}
            elif mode == "echo":
                message["content"] = req["messages"][0]["content"] + " " + user
            body = json.dumps({"choices": [{"message": message}], "usage": usage}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    base = serve_http(Hostile)
    out = str(tmp_path / "build")
    write_documents(out, [d for d in DOCS if d[0] in modes])
    stats = command.run_enrich(out, chat(f"{base}/v1"))
    counts = stats["counts"]
    rejects = {r["key"]: r["reason"] for r in pq.read_table(f"{out}/rejects/enrich").to_pylist()}
    assert rejects == {"10.1/ok1": "malformed_response", "10.1/ok4": "malformed_response",
                       "10.1/r429": "echoed_prompt"}
    assert counts["enriched"] == 3  # usage, negative, fine: their counts are no counts
    # counted for every answer checked: "fine" and "echo" (10 + 5 each), the one kept, the other rejected
    assert counts["usage_prompt_tokens"] == 20 and counts["usage_completion_tokens"] == 10
    assert counts["usage_prompt_tokens_kept"] == counts["usage_prompt_tokens_rejected"] == 10
    assert counts["usage_completion_tokens_kept"] == counts["usage_completion_tokens_rejected"] == 5


def test_the_usage_of_rejected_answers_is_reported_apart_from_the_kept(tmp_path, serve_http, capsys):
    """The endpoint's usage of answers the checks rejected was summed into the one usage the
    stage reported, with nothing to tell it from the summaries': a user pays for both, and now
    sees both shares, in `_stats` (`usage_*_kept` + `usage_*_rejected` = `usage_*`) and on
    the summary's usage line; a second run's cache hits say their usage was paid before."""
    from http.server import BaseHTTPRequestHandler

    answers = {"Schlaf und Gesundheit": ("This study shows that sleep quality is linked to mental health.", 40, 12),
               "Sommeil et santé": ("The authors find that sleep quality predicts students' mental health.", 30, 11),
               "Rechazo": ("I'm sorry, but I can't help with that request.", 25, 9)}

    class Usage(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):  # noqa: N802
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            text, prompt, completion = next(v for t, v in answers.items() if f"Title: {t}\n" in req["messages"][1]["content"])
            body = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}],
                               "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    base = serve_http(Usage)
    out = str(tmp_path / "build")
    write_documents(out, [d for d in DOCS if d[0] in ("10.1/en1", "10.1/ok1", "10.1/ok2")]
                    + [("10.1/refuse", "es", "Rechazo", "Estudiamos el sueño y la salud mental.")])
    stats = command.run_enrich(out, chat(f"{base}/v1"))
    c = stats["counts"]
    assert rejects_of(out) == {"10.1/refuse": "refusal"} and c["enriched"] == 2
    assert (c["usage_prompt_tokens_kept"], c["usage_completion_tokens_kept"]) == (70, 23)
    assert (c["usage_prompt_tokens_rejected"], c["usage_completion_tokens_rejected"]) == (25, 9)
    assert (c["usage_prompt_tokens"], c["usage_completion_tokens"]) == (95, 32)  # the total, as before
    assert command.check_counts(c) == []
    assert command.check_counts({**c, "usage_prompt_tokens_rejected": 0}) == [
        "usage_prompt_tokens != usage_prompt_tokens_kept + usage_prompt_tokens_rejected"]
    usage = command.summary_line(stats).splitlines()[1]
    assert usage == ("  endpoint usage, prompt + completion tokens: 70 + 23 for the 2 answers kept, 25 + 9 for the 1 "
                     "rejected by the checks; total 95 + 32")
    again = command.run_enrich(out, chat(f"{base}/v1"))
    assert again["counts"]["requests"] == 0
    assert command.summary_line(again).endswith("total 95 + 32; cached answers included (paid when first asked)")


def test_a_damaged_answer_cache_is_named_or_its_bad_rows_asked_again(tmp_path):
    """A cache file of random bytes, a table of another shape or a path that is a folder ended
    in sqlite3 tracebacks; an answer stored as bytes in AttributeError mid-run."""
    import sqlite3

    from openmsd_build.enrich.cache import AnswerCache, CachedAnswer

    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"\x00not a database" * 400)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE answers (key TEXT PRIMARY KEY, something TEXT)")
    wider = tmp_path / "wider.sqlite"  # the columns read, and one more: `put` failed mid-run
    with sqlite3.connect(wider) as db:
        db.execute("CREATE TABLE answers (key TEXT PRIMARY KEY, answer TEXT, refusal TEXT, usage_prompt_tokens "
                   "INTEGER, usage_completion_tokens INTEGER, extra TEXT)")
    folder = tmp_path / "folder.sqlite"
    folder.mkdir()
    for path in (junk, other, wider, folder):
        with pytest.raises(UserError, match="cannot be used"):
            AnswerCache(str(path))
    good = AnswerCache(str(tmp_path / "good.sqlite"))
    good.put("k", doi="10.1/x", text_sha1="s", summarizer="chat", prompt_id="p", model_id="m",
             answer=CachedAnswer("An answer in English."))
    assert good.get("k") == CachedAnswer("An answer in English.")
    with good._lock:
        good._db.execute("UPDATE answers SET answer = ? WHERE key = 'k'", (b"bytes",))
    assert good.get("k") is None  # asked again
    with good._lock:
        good._db.execute("UPDATE answers SET answer = CAST(? AS TEXT) WHERE key = 'k'", (b"\xff\xfe not utf-8",))
    assert good.get("k") is None
    good.close()


def test_a_cache_dir_that_is_a_file_is_one_line(tmp_path, capsys):
    """`--cache-dir` naming a file (or a folder under one, or a link to nothing) raised
    FileExistsError / NotADirectoryError from `os.makedirs` (a traceback, exit 1)."""
    from openmsd_build.cli import main
    from openmsd_build.enrich.cache import AnswerCache

    (tmp_path / "a-file").write_text("x")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    for folder in ("a-file", "a-file/sub", "gone"):
        with pytest.raises(UserError, match="cannot be made"):
            AnswerCache(str(tmp_path / folder / "enrich.sqlite"))
    out = str(tmp_path / "build")
    write_documents(out, DOCS[:6])
    assert main(["enrich", "--out", out, "--demo-stub", "--cache-dir", str(tmp_path / "a-file")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "cannot be made" in err[-1] and "Traceback" not in "\n".join(err)


def test_an_answer_borrowing_the_prompts_words_is_no_echo():
    """A 40-character span of a prompt made an answer an echo: a model's usual preamble ("Here
    are the three most important findings of the following scientific paper, translated into
    English: ...") was rejected, cached answers included. The whole prompt must be repeated."""
    from openmsd_build.enrich.command import check_answer
    from openmsd_build.enrich.prompts import SYSTEM
    from openmsd_build.enrich.summarizers import Reply

    findings = PROMPTS["findings3"]
    for answer in ("Here are the three most important findings of the following scientific paper, translated into "
                   "English: 1. Sleep quality predicts mental health. 2. The effect is large. 3. It holds for all.",
                   "The three most important findings of the following scientific paper are that sleep quality "
                   "predicts the mental health of students, that the effect is large, and that it holds for all."):
        assert check_answer(Reply(answer=answer), 96)[1] is None, answer
    echo = f"{SYSTEM} {findings.instruction} Title: Schlaf und Gesundheit"
    assert check_answer(Reply(answer=echo), 96)[1] == "echoed_prompt"


def test_enrich_shows_its_progress(tmp_path, capsys, stub):
    """`enrich` against a real endpoint takes hours (seconds a request), and it printed
    nothing until its summary line: it had no progress line, as the stages have. Now the
    documents done out of those in documents/, with its rejects as errors, as `text` does
    (a line every 30 s in a log, rewritten in place on a terminal; the last one at the end)."""
    import io
    import time

    from openmsd_build.cli import main
    from openmsd_build.core import progress

    out = str(tmp_path / "build")
    write_documents(out, DOCS[:6])
    assert main(["enrich", "--out", out, "--demo-stub"]) == 0
    assert "enrich: 6 / 6 documents (100%)" in capsys.readouterr().err
    # while it runs: each answered batch moves the line, the planned count known from the start
    stream = io.StringIO()
    out2 = str(tmp_path / "build2")
    write_documents(out2, DOCS[:3] + DOCS[7:8])  # two answered at once, one slow to time out
    with progress.reporting("enrich", interval=0.05, stream=stream):
        command.run_enrich(out2, chat(stub.url, timeout=1.0), concurrency=1)
        time.sleep(0.1)
    lines = stream.getvalue().splitlines()
    assert any(line.startswith("enrich: ") and " / 4 documents" in line and "(100%)" not in line for line in lines)
    assert lines[-1].startswith("enrich: 4 / 4 documents (100%)") and "1 errors" in lines[-1], lines


def test_a_dead_endpoint_warns_and_never_empties_earlier_summaries(tmp_path, capsys):
    """Every request a connection error: the run said '0 enriched + 4 rejected', exited 0
    without a warning, and replaced the 4 summaries an earlier run had written with none.
    Now it warns, and a run that would empty enriched/ is refused, keeping the earlier one."""
    from openmsd_build.cli import main

    out = str(tmp_path / "build")
    write_documents(out, DOCS[:6])
    dead = ["--summarizer", "chat", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "1",
            "--retries", "0"]
    assert main(["enrich", "--out", out, *dead]) == 0  # nothing to keep yet: said, not refused
    assert "warning: enrich summarized none of the 4 non-English documents (connection_error 4)" \
        in capsys.readouterr().err
    assert main(["enrich", "--out", out, "--demo-stub"]) == 0
    capsys.readouterr()
    before = pq.read_table(enriched_dir(out)).num_rows
    assert before == 4
    assert main(["enrich", "--out", out, *dead]) == 2
    err = capsys.readouterr().err
    assert "holds 4" in err and "kept" in err, err
    assert pq.read_table(enriched_dir(out)).num_rows == before
    # the refused run's rejects went with it: the message sends nobody to the earlier run's
    assert "See rejects/enrich/" not in err and f"remove {enriched_dir(out)} and run again" in err
    # a run without --summarizer (the default, none) summarizes nothing either: it emptied
    # enriched/ silently, exit 0; now refused the same way
    assert main(["enrich", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "--summarizer none, the default, summarizes none of the 4 non-English documents" in err and "holds 4" in err
    assert pq.read_table(enriched_dir(out)).num_rows == before
