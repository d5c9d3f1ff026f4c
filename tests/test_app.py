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
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from ppsf_helpers import ScriptedGenerator, call, repo_tokenizer
from servers import free_port, running

from agent.ppsf import REPO_ROOT
from agent.web import PharmacistApp, Turn, transcript_file

SCREENSHOTS = REPO_ROOT / "tests" / ".screenshots"
TURKISH_ONLY = set("çğıöşüÇĞİÖŞÜ")


# ---- the chat messages a run's events become ----------------------------------------------------------


def test_a_runs_events_become_collapsible_steps_and_a_streamed_answer():
    turn = Turn()
    turn.apply({"type": "text", "field": "reasoning_content", "text": "Bakmam "})
    turn.apply({"type": "text", "field": "reasoning_content", "text": "gerek."})
    turn.apply({"type": "tool_call", "name": "search_drug", "arguments": {"drug": "Parol"}})
    assert turn.messages[-1]["metadata"]["status"] == "pending"
    turn.apply({"type": "tool_result", "name": "search_drug", "id": "c", "result": {"active_ingredient": "X"}})
    turn.apply({"type": "text", "field": "content", "text": "Parol "})
    turn.apply({"type": "text", "field": "content", "text": "ağrı kesicidir."})
    thought, tool, result, answer = turn.messages
    assert thought == {"role": "assistant", "content": "Bakmam gerek.", "metadata": {"title": "Thought"}}
    assert tool["metadata"]["title"] == "Tool call: search_drug" and tool["metadata"]["status"] == "done"
    assert isinstance(tool["metadata"]["duration"], float) and '"drug": "Parol"' in tool["content"]
    assert result["metadata"]["parent_id"] == tool["metadata"]["id"] and '"active_ingredient": "X"' in result["content"]
    assert answer == {"role": "assistant", "content": "Parol ağrı kesicidir."}
    turn.apply({"type": "final", "message": {"role": "assistant", "content": "Parol ağrı kesicidir."}})
    assert len(turn.messages) == 4  # the streamed answer is the final one


def test_errors_and_answer_check_replacements_are_marked():
    turn = Turn()
    turn.apply({"type": "tool_call", "name": "calculate_dose", "arguments": {}})
    error = {"error": {"code": "invalid_input", "message": "weight_kg must be a number"}}
    turn.apply({"type": "tool_result", "name": "calculate_dose", "id": "c", "result": error})
    turn.apply({"type": "text", "field": "content", "text": "5000 mg"})
    note = "a dose the tool did not give"
    turn.apply({"type": "dose_check", "replaced": "5000 mg", "content": "tek doz 300 mg", "note": note})
    turn.apply({"type": "final", "message": {"role": "assistant", "content": "tek doz 300 mg"}})
    titles = [m.get("metadata", {}).get("title") for m in turn.messages]
    assert "Error from calculate_dose: invalid_input" in titles
    assert "Dose check: a dose the tool did not give" in titles
    assert turn.messages[-1] == {"role": "assistant", "content": "tek doz 300 mg"}
    # Any answer check is marked by its own name and note (agent.engine.checks).
    turn.apply({"type": "interaction_check", "replaced": "ok", "content": "ok\n\nCoumadin + Aspirin", "note": "added"})
    assert turn.messages[-1]["metadata"]["title"] == "Interaction check: added"


def test_stop_ends_the_run_and_frees_the_model():
    """Closing the stream (the Stop button cancels it) makes the worker's next event end the agent's run."""
    slow_calls = [call("search_drug", drug="Parol")] * 5
    app = PharmacistApp(None, repo_tokenizer(), ScriptedGenerator(slow_calls))
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


@pytest.mark.parametrize(
    ("argv", "address"),
    [([], (None, None)), (["--host", "0.0.0.0", "--port", "8123"], ("0.0.0.0", 8123))],
)
def test_the_address_is_gradios_environment_unless_a_flag_names_it(monkeypatch, argv, address):
    """Unset, --host and --port reach launch() as None, which makes Gradio read GRADIO_SERVER_NAME / _PORT."""
    import agent.engine.openai_backend
    import agent.ppsf
    import agent.web

    launched: dict = {}

    class Demo:
        def queue(self, **kwargs):
            return self

        def launch(self, **kwargs):
            launched.update(kwargs)

    monkeypatch.setenv("GRADIO_SERVER_PORT", "9999")  # read by Gradio, never by app.py
    monkeypatch.setattr(agent.web, "build", lambda app: Demo())
    monkeypatch.setattr(agent.web, "PharmacistApp", lambda *args, **kwargs: None)
    monkeypatch.setattr(agent.ppsf, "load_tokenizer", lambda: None)
    monkeypatch.setattr(agent.engine.openai_backend, "OpenAIGenerator", lambda *args, **kwargs: None)
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
