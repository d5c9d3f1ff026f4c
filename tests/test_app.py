"""The browser chat (app.py, agent/web.py): its event rendering, and the real app in a real headless browser.

The browser tests start `python app.py` on 127.0.0.1 with the real default model and drive Debian's chromium
through Selenium and chromium-driver (their own browser downloads cannot work here). A failing browser test
leaves a screenshot in tests/.screenshots/.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
import types
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from ppsf_helpers import ScriptedGenerator, call, repo_tokenizer
from servers import free_port, running

from agent.engine.backends import CUSTOM, Backend
from agent.pharmacy import SYSTEM_PROMPT
from agent.ppsf import REPO_ROOT
from agent.web import PharmacistApp, Turn, transcript_file

SCREENSHOTS = REPO_ROOT / "tests" / ".screenshots"
TURKISH_ONLY = set("çğıöşüÇĞİÖŞÜ")


# ---- the chat messages a run's events become ----------------------------------------------------------


def test_a_runs_events_become_collapsible_steps_and_the_final_answer():
    turn = Turn()
    turn.apply({"type": "tool_call", "name": "search_drug", "arguments": {"drug": "Parol"}})
    assert turn.messages[-1]["metadata"]["status"] == "pending"
    turn.apply({"type": "tool_result", "name": "search_drug", "id": "c", "result": {"active_ingredient": "X"}})
    turn.apply({"type": "final", "message": {"role": "assistant", "content": "Parol ağrı kesicidir."}})
    tool, result, answer = turn.messages
    assert tool["metadata"]["title"] == "Tool call: search_drug" and tool["metadata"]["status"] == "done"
    assert isinstance(tool["metadata"]["duration"], float) and '"drug": "Parol"' in tool["content"]
    assert result["metadata"]["parent_id"] == tool["metadata"]["id"] and '"active_ingredient": "X"' in result["content"]
    assert answer == {"role": "assistant", "content": "Parol ağrı kesicidir."} and turn.answer is answer


def test_errors_and_answer_check_replacements_are_marked():
    turn = Turn()
    turn.apply({"type": "tool_call", "name": "calculate_dose", "arguments": {}})
    error = {"error": {"code": "invalid_input", "message": "weight_kg must be a number"}}
    turn.apply({"type": "tool_result", "name": "calculate_dose", "id": "c", "result": error})
    note = "a dose the tool did not give"
    turn.apply({"type": "dose_check", "rule": "dose_check", "action": "replace", "note": note})
    turn.apply({"type": "final", "message": {"role": "assistant", "content": "tek doz 300 mg"}})
    titles = [m.get("metadata", {}).get("title") for m in turn.messages]
    assert "Error from calculate_dose: invalid_input" in titles
    assert "Safety rule: dose check" in titles
    assert turn.messages[-1] == {"role": "assistant", "content": "tek doz 300 mg"}
    assert not any("5000" in m["content"] for m in turn.messages)  # what a rule replaced is never shown
    # Any rule is marked by its own name (agent.engine.checks, agent.engine.triage); an addition as one.
    turn.apply({"type": "interaction_check", "rule": "interaction_check", "action": "append", "note": "added"})
    assert turn.messages[-1]["metadata"]["title"] == "Safety rule: interaction check"
    assert turn.messages[-1]["content"] == "A safety rule added to this answer."


def test_stop_ends_the_run_and_frees_the_model():
    """Closing the stream (the Stop button cancels it) makes the worker's next event end the agent's run."""
    slow_calls = [call("search_drug", drug="Parol")] * 5
    app = PharmacistApp(Backend(CUSTOM, ScriptedGenerator(slow_calls), repo_tokenizer(), tuned=True))
    stream = app.run("s1", [{"role": "user", "content": "Parol?"}], "", "auto", 5)
    next(stream)
    stream.close()
    assert app._lock.acquire(timeout=30)  # the worker has let go of the model
    app._lock.release()


def test_the_transcript_download_is_private_and_does_not_stay(tmp_path):
    messages = [{"role": "user", "content": "Parol?"}, {"role": "assistant", "content": "Ağrı kesici."}]
    folder = tmp_path / "downloads"
    path = Path(transcript_file(messages, folder))
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == messages
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700
    os.utime(path, (time.time() - 3600, time.time() - 3600))
    newer = Path(transcript_file(messages, folder))
    assert not path.exists() and newer.exists()  # an hour-old download is gone once another is made


def test_the_download_escapes_line_breaks_as_the_engines_transcript_does(tmp_path):
    """U+2028 and U+2029 used to be written raw: str.splitlines() (and many JSONL readers) broke the line there;
    a lone surrogate (an undecodable message) failed to write at all."""
    from agent.engine.transcript import Transcript

    tricky = [
        {"role": "user", "content": "satır\u2028ayırıcı\u2029paragraf\x85NEL \udcff"},
        {"role": "assistant", "content": "Ağrı kesici."},
    ]
    data = Path(transcript_file(tricky, tmp_path / "downloads")).read_bytes()
    lines = data.decode("utf-8").splitlines()
    assert len(lines) == 2 and [json.loads(line) for line in lines] == tricky
    log = tmp_path / "engine.jsonl"
    Transcript(log, "r1").write("message", message=tricky[0])
    engine = log.read_bytes()
    assert len(engine.decode("utf-8").splitlines()) == 1 and json.loads(engine)["message"] == tricky[0]
    for escaped in (rb"\u2028", rb"\u2029", rb"\u0085", rb"\udcff"):  # the same spelling in both files
        assert escaped in data.split(b"\n")[0] and escaped in engine


@contextmanager
def in_process_chat(app: PharmacistApp) -> Iterator[Any]:
    """The real Gradio chat of app on a free 127.0.0.1 port, and a gradio_client Client on it."""
    from gradio_client import Client

    from agent.web import build

    demo = build(app)
    demo.queue(default_concurrency_limit=1)
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        yield Client(demo.local_url, verbose=False)
    finally:
        demo.close()


def test_a_stopped_backend_or_an_undecodable_message_gets_a_one_line_error_in_the_tab():
    """Both used to leave the tab with no answer and no error."""
    from agent.engine.openai_backend import OpenAIGenerator

    dead = f"http://127.0.0.1:{free_port()}/v1"  # a server that has stopped: nothing listens there
    app = PharmacistApp(Backend("openai", OpenAIGenerator("ppsf", repo_tokenizer(), base_url=dead), repo_tokenizer()))
    with in_process_chat(app) as client:
        _, _, _, error, _ = client.predict("Parol ne işe yarar?", [], SYSTEM_PROMPT, "auto", 2, api_name="/ask")
        assert error.startswith("No answer: ") and dead.removesuffix("/v1") in error and "\n" not in error
        # A lone surrogate, as a JSON escape (what a page sends for a broken character; httpx cannot send it).
        chat, _, _, _, error, _ = call_raw(client.src, "ask", ["Parol \udcff?", [], SYSTEM_PROMPT, "auto", 2])
        assert error.startswith("This message cannot be read: it is not valid UTF-8 text") and "\n" not in error
        assert chat == []  # nothing the tab cannot show was added to it


def call_raw(url: str, api_name: str, data: list) -> list:
    """Gradio's HTTP API called with a body json.dumps escapes (ASCII only): the last event's outputs, states too."""
    base = url.rstrip("/") + f"/gradio_api/call/{api_name}"
    body = json.dumps({"data": data}).encode()
    request = urllib.request.Request(base, data=body, headers={"Content-Type": "application/json"})
    event_id = json.loads(urllib.request.urlopen(request, timeout=60).read())["event_id"]
    stream = urllib.request.urlopen(f"{base}/{event_id}", timeout=120).read().decode()
    events = [line.removeprefix("data: ") for line in stream.splitlines() if line.startswith("data: ")]
    return json.loads(events[-1])


_SCRIPTED_APP = """
import sys
sys.path.insert(0, {tests!r})
from ppsf_helpers import ScriptedGenerator, repo_tokenizer
from agent.engine.backends import Backend
from agent.web import PharmacistApp, parse_args, serve
args = parse_args(sys.argv[1:])
generator = ScriptedGenerator(["@PHARMACIST\\nParol bir ağrı kesicidir."] * 9)
app = PharmacistApp(Backend("custom", generator, repo_tokenizer(), tuned=True))
raise SystemExit(serve(app, host="127.0.0.1", port=args.port, keep_transcripts=args.keep_transcripts))
"""


def test_keeping_the_transcripts_is_asked_by_a_flag_or_the_environment(monkeypatch):
    from agent.web import parse_args

    monkeypatch.delenv("PPSF_KEEP_TRANSCRIPTS", raising=False)
    assert parse_args([]).keep_transcripts is False and parse_args(["--keep-transcripts"]).keep_transcripts is True
    for value, keep in (("1", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv("PPSF_KEEP_TRANSCRIPTS", value)
        assert parse_args([]).keep_transcripts is keep


@pytest.mark.parametrize("keep", [False, True])
def test_the_app_removes_the_transcripts_it_wrote_when_it_exits_unless_asked_to_keep_them(tmp_path, keep):
    """Every transcript download used to stay on disk after the app exited."""
    import subprocess
    import tempfile

    from gradio_client import Client

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = {k: v for k, v in os.environ.items() if k not in ("GRADIO_TEMP_DIR", "PPSF_KEEP_TRANSCRIPTS")}
    env |= {"HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    if keep:
        env["PPSF_KEEP_TRANSCRIPTS"] = "1"
    command = [sys.executable, "-c", _SCRIPTED_APP.format(tests=str(REPO_ROOT / "tests")), "--port", str(port)]

    def ready() -> bool:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return True
        except OSError:
            return False

    log = tmp_path / "app.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not ready():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.5)
        folder = Path(tempfile.gettempdir()) / f"ppsf-chat-{process.pid}"
        _, _, _, error, download = Client(url, verbose=False).predict(
            "Parol ne işe yarar?", [], SYSTEM_PROMPT, "auto", 2, api_name="/ask"
        )
        assert error == "" and download and "Parol" in Path(download).read_text(encoding="utf-8")
        (ours,) = folder.glob("*.jsonl")
        written = list(folder.rglob("*.jsonl"))  # the app's file and Gradio's copy of it for the tab
        assert stat.S_IMODE(ours.stat().st_mode) == 0o600 and len(written) == 2
        process.terminate()  # SIGTERM, as a service manager stops it
        assert process.wait(timeout=60) == 0, log.read_text(errors="replace")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if keep:
        assert all(p.exists() for p in written)
        shutil.rmtree(folder)
    else:
        assert not folder.exists()


@pytest.mark.parametrize(
    ("argv", "address"),
    [([], (None, None)), (["--host", "0.0.0.0", "--port", "8123"], ("0.0.0.0", 8123))],
)
def test_the_address_is_gradios_environment_unless_a_flag_names_it(monkeypatch, tmp_path, argv, address):
    """Unset, --host and --port reach launch() as None, which makes Gradio read GRADIO_SERVER_NAME / _PORT."""
    import agent.web

    launched: dict = {}

    class Demo:
        def queue(self, **kwargs):
            return self

        def launch(self, **kwargs):
            launched.update(kwargs)

    monkeypatch.setenv("GRADIO_SERVER_PORT", "9999")  # read by Gradio, never by app.py
    monkeypatch.setattr(agent.web, "build", lambda app: Demo())
    app = types.SimpleNamespace(downloads=tmp_path / "downloads", ttl=None)  # what serve() reads of the app
    monkeypatch.setattr(agent.web, "PharmacistApp", lambda *args, **kwargs: app)
    monkeypatch.setattr(agent.web, "build_backend", lambda options: None)
    assert agent.web.main(["--backend", "openai", *argv]) == 0
    assert (launched["server_name"], launched["server_port"]) == address


# ---- the real app in a real browser -------------------------------------------------------------------


@pytest.fixture(scope="module")
def app_url(tmp_path_factory) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    # The address as containers and Spaces give it, in Gradio's own variables: app.py has no flag for it here.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    env |= {"GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
    command = [sys.executable, str(REPO_ROOT / "app.py")]

    def ready() -> bool:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return True
        except OSError:
            return False

    with running(command, env, tmp_path_factory.mktemp("app") / "app.log", ready, timeout=300):
        yield url


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "install Debian's chromium and chromium-driver (make setup does)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    session = webdriver.Chrome(service=Service(driver), options=options)
    yield session
    session.quit()


@contextmanager
def screenshot_on_failure(browser, name: str):
    try:
        yield
    except BaseException:
        SCREENSHOTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
        raise


def ask(browser, question: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 60).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#question textarea"))
    box = browser.find_element(By.CSS_SELECTOR, "#question textarea")
    box.send_keys(question)
    box.send_keys(Keys.ENTER)


def chat_text(browser) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, "chat").text


def wait_for_answer(browser, question: str, timeout: float = 300) -> None:
    """Until the turn's answer is in: the question, then text after the last tool call, and no run pending."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def done(b) -> bool:
        text = chat_text(b)
        pending = b.find_elements(By.CSS_SELECTOR, "#chat .pending, #chat [class*='generating']")
        download = b.find_element(By.ID, "download")
        return question in text and not pending and "Tool call" in text and download.is_enabled()

    WebDriverWait(browser, timeout, poll_frequency=1).until(done)
    # The last chunks render after the run ends: wait until the chat stops changing (a fixed sleep was too short
    # on a loaded machine).
    seen: list[str] = []

    def settled(b) -> bool:
        seen.append(chat_text(b))
        return len(seen) > 1 and seen[-1] == seen[-2]

    WebDriverWait(browser, 60, poll_frequency=2).until(settled)


@pytest.mark.slow
def test_a_lookup_shows_the_tool_call_its_result_and_an_answer_with_the_ingredient(app_url, browser):
    from selenium.webdriver.common.by import By

    browser.get(app_url)
    with screenshot_on_failure(browser, "lookup"):
        ask(browser, "Parol ne işe yarar?")
        wait_for_answer(browser, "Parol ne işe yarar?")
        assert "Tool call: search_drug" in chat_text(browser)
        assert "Parasetamol" in chat_text(browser).split("Tool call: search_drug", 1)[1]
        for title in ("Tool call: search_drug", "Result of search_drug"):  # collapsible, the result inside the call
            browser.find_element(By.XPATH, f"//*[@id='chat']//*[contains(text(), '{title}')]").click()
            time.sleep(1)
        assert '"active_ingredient": "Parasetamol"' in chat_text(browser)


@pytest.mark.slow
def test_an_english_interaction_question_gets_an_english_answer(app_url, browser):
    browser.get(app_url)
    question = "Can I take ibuprofen with warfarin?"
    with screenshot_on_failure(browser, "english"):
        ask(browser, question)
        wait_for_answer(browser, question)
        text = chat_text(browser)
        assert "Tool call: check_interactions" in text
        answer = text.split("Tool call: check_interactions", 1)[1]
        assert "bleeding" in answer.lower() and not (TURKISH_ONLY & set(answer)), answer


@pytest.mark.slow
def test_two_tabs_keep_separate_conversations(app_url, browser):
    browser.get(app_url)
    first = browser.current_window_handle
    with screenshot_on_failure(browser, "tabs"):
        ask(browser, "Parol ne işe yarar?")
        browser.switch_to.new_window("tab")
        browser.get(app_url)
        second = browser.current_window_handle
        ask(browser, "What is Nurofen for?")  # queued behind the first tab's run: one model serves both
        wait_for_answer(browser, "What is Nurofen for?")
        assert "Parol ne işe yarar?" not in chat_text(browser)
        browser.switch_to.window(first)
        wait_for_answer(browser, "Parol ne işe yarar?")
        assert "Nurofen" not in chat_text(browser)
        browser.switch_to.window(second)
        browser.close()
        browser.switch_to.window(first)
