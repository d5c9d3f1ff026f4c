"""The OpenAI backend and the CLI against a broken or hostile server: a fake one on 127.0.0.1, bounded.

Each behaviour used to end in a traceback, a silent empty answer, or an unbounded read. Now each is one
ServingError naming the URL and the problem, or a reply cut at max_new_tokens.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ppsf_helpers import repo_tokenizer

from agent.engine.openai_backend import OpenAIGenerator, ServingError
from agent.ppsf import REPO_ROOT

PROMPT = "@FORMAT PPSF/1.0\n\n@PATIENT\nParol ne işe yarar?\n\n"
REPLY = "@PHARMACIST\nParol ağrı kesicidir."
FLOOD_CAP = 20 * 1024 * 1024  # the flooding server stops by itself after 20 MB
SLOW_CAP = 10.0  # and the trickling one after 10 s


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    behaviour = "ok"
    sent = 0  # bytes of completion text the last request sent
    requests = 0


class Handler(BaseHTTPRequestHandler):
    server: FakeServer

    def log_message(self, *args) -> None:  # keep pytest's output clean
        pass

    def do_GET(self) -> None:
        self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        json.loads(self.rfile.read(length) or b"{}")
        self.server.requests += 1
        self.server.sent = 0
        getattr(self, "_" + self.server.behaviour)()

    # ---- behaviours ----
    def _ok(self) -> None:
        self._stream([_chunk(REPLY[:10]), _chunk(REPLY[10:], finish="stop"), _usage(12, 5)])

    def _malformed(self) -> None:
        self._stream(["{not json"])

    def _error_event(self) -> None:
        self._stream([json.dumps({"error": {"message": "model overloaded", "type": "server_error"}})])

    def _http500(self) -> None:
        page = "<html><head><title>500</title></head><body>" + "<p>Internal Server Error</p>" * 180 + "</body></html>"
        self._raw(500, "text/html", page.encode())

    def _html200(self) -> None:
        self._raw(200, "text/html", b"<html><body><h1>Welcome to nginx!</h1></body></html>")

    def _non_string_text(self) -> None:
        self._stream([json.dumps({"id": "c", "object": "text_completion", "choices": [{"index": 0, "text": 123}]})])

    def _bad_usage(self) -> None:
        usage = {"prompt_tokens": "many", "completion_tokens": None, "total_tokens": -1}
        self._stream([_chunk(REPLY, finish="stop"), json.dumps({"id": "c", "choices": [], "usage": usage})])

    def _flood(self) -> None:
        """Ignores max_tokens: streams text until the client goes away or 20 MB are out."""
        self._start_stream()
        piece = " blah" * 200
        try:
            while self.server.sent < FLOOD_CAP:
                self._event(_chunk(piece))
                self.server.sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _trickle(self) -> None:
        """A chunk every 0.2 s, for 10 s: no read ever times out."""
        self._start_stream()
        start = time.monotonic()
        try:
            while time.monotonic() - start < SLOW_CAP:
                self._event(_chunk("a"))
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass

    # ---- plumbing ----
    def _json(self, status: int, body: dict) -> None:
        self._raw(status, "application/json", json.dumps(body).encode())

    def _raw(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()

    def _event(self, data: str) -> None:
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()

    def _stream(self, events: list[str]) -> None:
        self._start_stream()
        for data in events:
            self._event(data)
        self._event("[DONE]")


def _chunk(text: str, finish: str | None = None) -> str:
    choice = {"index": 0, "text": text, "finish_reason": finish}
    return json.dumps({"id": "c", "object": "text_completion", "model": "fake", "choices": [choice]})


def _usage(prompt: int, completion: int) -> str:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return json.dumps({"id": "c", "object": "text_completion", "choices": [], "usage": usage})


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    srv = FakeServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def url(server: FakeServer) -> Iterator[str]:
    server.behaviour = "ok"
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.behaviour = "ok"


def generator(url: str, **kwargs) -> OpenAIGenerator:
    return OpenAIGenerator("fake", repo_tokenizer(), base_url=url, max_retries=0, **kwargs)


def test_the_fake_server_answers_like_a_real_one(url):
    result = generator(url).generate(PROMPT, max_new_tokens=32)
    assert result.text == REPLY and result.prompt_tokens == 12 and result.decoded_tokens == 5


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("malformed", "sent a malformed stream event"),
        ("error_event", "reported an error: model overloaded"),
        ("non_string_text", "sent a completion text that is not a string: 123"),
        ("html200", "answered without any completion event (content-type text/html)"),
    ],
)
def test_broken_streams_are_one_clear_error(server, url, behaviour, message):
    server.behaviour = behaviour
    with pytest.raises(ServingError, match=re.escape(message)) as caught:
        generator(url).generate(PROMPT, max_new_tokens=32)
    assert url in str(caught.value)


def test_an_html_error_page_becomes_one_short_line(server, url):
    server.behaviour = "http500"
    with pytest.raises(ServingError) as caught:
        generator(url).generate(PROMPT, max_new_tokens=32)
    text = str(caught.value)
    assert "HTTP 500" in text and "Internal Server Error" in text
    assert "<" not in text and "\n" not in text and len(text) < 400  # the 5 KB page used to be the message


def test_usage_that_is_not_counts_is_recounted_here(server, url):
    server.behaviour = "bad_usage"
    result = generator(url).generate(PROMPT, max_new_tokens=32)
    tokenizer = repo_tokenizer()
    assert result.text == REPLY
    assert result.decoded_tokens == len(tokenizer(REPLY, add_special_tokens=False)["input_ids"])
    assert result.prompt_tokens == len(tokenizer(PROMPT, add_special_tokens=False)["input_ids"])


def test_a_server_ignoring_max_tokens_is_cut_at_max_new_tokens(server, url):
    server.behaviour = "flood"
    start = time.perf_counter()
    result = generator(url).generate(PROMPT, max_new_tokens=64)
    assert time.perf_counter() - start < 20
    assert result.stop_reason == "max_new_tokens"
    assert len(repo_tokenizer()(result.text, add_special_tokens=False)["input_ids"]) <= 64
    assert server.sent < FLOOD_CAP  # the stream was closed long before the 20 MB the server had in store


def test_a_trickling_server_hits_the_step_deadline(server, url):
    server.behaviour = "trickle"
    start = time.perf_counter()
    with pytest.raises(ServingError, match=r"did not finish a step within 1 s"):
        generator(url, timeout=1.0).generate(PROMPT, max_new_tokens=10_000)
    assert time.perf_counter() - start < SLOW_CAP - 3


# ---- the CLI, as a process -------------------------------------------------------------------------------


def cli(*args: str | bytes, stdin: bytes | None = None, cache=None, timeout: float = 120):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    if cache is not None:
        env["PPSF_CACHE"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        cwd=REPO_ROOT,
        input=stdin,
        capture_output=True,
        env=env,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([b"Parol ne i\xff\xfe yarar?"], b"not valid UTF-8 text"),
        (["   "], b"it is empty"),
        (["--max-steps", "0", "q"], b"--max-steps: must be >= 1, got 0"),
        (["--max-new-tokens", "0", "q"], b"--max-new-tokens: must be >= 1, got 0"),
        (["--timeout", "-1", "q"], b"--timeout: must be a number of seconds > 0"),
    ],
)
def test_bad_arguments_are_one_line_before_anything_loads(args, message, tmp_path):
    done = cli(*args, cache=tmp_path)
    assert done.returncode == 2 and message in done.stderr and b"Traceback" not in done.stderr
    assert not (tmp_path / "transcripts").exists()  # refused before any run


def test_undecodable_terminal_lines_are_refused_and_the_chat_goes_on(url, tmp_path):
    stdin = b"Parol ne i\xff\xfe yarar?\nParol ne i\xc5\x9fe yarar?\n"
    done = cli("--backend", "openai", "--base-url", url, "--model", "fake", stdin=stdin, cache=tmp_path)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"this line cannot be asked: it is not valid UTF-8 text" in done.stderr
    assert "Parol ağrı kesicidir.".encode() in done.stdout and b"Traceback" not in done.stderr


def test_a_question_longer_than_the_context_is_refused_with_a_clear_message(url, tmp_path):
    done = cli("--backend", "openai", "--base-url", url, "--model", "fake", "Parol " * 20_000, cache=tmp_path)
    assert done.returncode == 2 and b"shorten the question" in done.stderr and b"Traceback" not in done.stderr


def test_each_cli_run_writes_its_own_private_transcript(url, tmp_path):
    for _ in range(2):
        done = cli("--backend", "openai", "--base-url", url, "--model", "fake", "Parol ne işe yarar?", cache=tmp_path)
        assert done.returncode == 0, done.stderr.decode(errors="replace")
    folder = tmp_path / "transcripts"
    files = sorted(folder.iterdir())
    assert len(files) == 2 and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert all(len({json.loads(line)["run"] for line in f.read_text().splitlines()}) == 1 for f in files)


def test_server_errors_mid_run_end_the_cli_with_one_line(server, url, tmp_path):
    server.behaviour = "http500"
    done = cli("--backend", "openai", "--base-url", url, "--model", "fake", "Parol ne işe yarar?", cache=tmp_path)
    assert done.returncode == 2 and b"HTTP 500" in done.stderr and b"Traceback" not in done.stderr
