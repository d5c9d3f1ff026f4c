"""The pharmacist agent in the browser: a Gradio chat that shows every step as it happens (`python app.py`).

One model in memory serves every tab; requests are queued one at a time, and a tab's conversation lives in
that tab only ("Download transcript" hands it its JSONL, deleted at exit unless --keep-transcripts). The
agent runs in a worker thread and reports its events (agent.engine.agent) through a queue; the chat shows
the thought, each tool call as a collapsible message (pending, then done with its duration), its result, a
answer-check replacements (dose, interactions), and the answer as it streams.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .cli import undecodable
from .engine.agent import AgentConfig, Event, InputTooLong
from .engine.backends import Backend, backend_errors, build_backend
from .engine.transcript import json_line, private_dir
from .pharmacy import SYSTEM_PROMPT, demo_examples, pharmacist_agent
from .run_options import add_backend_options, backend_options

SPACE_BASE_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
LANGUAGE_NOTE = {"TR": " Yanıtı Türkçe ver.", "EN": " Answer in English."}
EXAMPLES = [
    "Parol ne işe yarar?",
    "Can I take Coumadin with Aspirin?",
    "20 kilo, 5 yaşındaki çocuğuma ne kadar Calpol verebilirim?",
    "Hamileyim, Arveles kullanabilir miyim?",
    "How do I get Xanax without a prescription?",
]
DISCLAIMER = (
    "**Not medical advice.** A demo of the PPSF format: a 135M-parameter model with offline tools over a small,"
    " unverified drug set. Check the label and ask a pharmacist or doctor. / **Tıbbi tavsiye değildir.**"
)


class Cancelled(Exception):
    """The user pressed Stop: raised from the agent's event callback to end its run."""


@dataclass
class Turn:
    """The chat messages of one run, built from the agent's events."""

    messages: list[dict] = field(default_factory=list)
    answer: dict | None = None
    calls: list[tuple[dict, float]] = field(default_factory=list)  # pending call messages and their start time

    def apply(self, event: Event) -> None:
        kind = event["type"]
        if kind == "tool_call":
            arguments = json.dumps(event.get("arguments"), ensure_ascii=False, indent=1)
            message = {
                "role": "assistant",
                "content": f"```json\n{arguments}\n```",
                "metadata": {
                    "title": f"Tool call: {event['name']}",
                    "status": "pending",
                    "id": f"call-{len(self.messages)}",
                },
            }
            self.messages.append(message)
            self.calls.append((message, time.perf_counter()))
        elif kind == "tool_result":
            result = event["result"]
            error = isinstance(result, dict) and "error" in result
            parent = None
            if self.calls:
                parent, started = self.calls.pop(0)
                parent["metadata"] |= {"status": "done", "duration": round(time.perf_counter() - started, 2)}
            code = result["error"].get("code") if error and isinstance(result["error"], dict) else None
            title = f"Error from {event['name']}: {code}" if error else f"Result of {event['name']}"
            message = {
                "role": "assistant",
                "content": f"```json\n{json.dumps(result, ensure_ascii=False, indent=1)}\n```",
                "metadata": {"title": title, "status": "done"},
            }
            if parent is not None:
                message["metadata"]["parent_id"] = parent["metadata"]["id"]
            self.messages.append(message)
        elif event.get("action") in ("replace", "answer", "refuse", "append"):
            # A safety rule (an answer check or a triage rule) acted: the page says so, and never shows what
            # it replaced (the transcript keeps that for the developer).
            added = event["action"] == "append"
            self.messages.append({
                "role": "assistant",
                "content": SAFETY_RULE_ADDED if added else SAFETY_RULE_NOTE,
                "metadata": {"title": f"Safety rule: {kind.replace('_', ' ')}"},
            })  # fmt: skip
        elif kind == "final":  # the answer, once the checks passed it (the engine streams no prose)
            self.answer = {"role": "assistant", "content": event["message"].get("content") or ""}
            self.messages.append(self.answer)


SAFETY_RULE_NOTE = "A safety rule answered this question."
SAFETY_RULE_ADDED = "A safety rule added to this answer."


class PharmacistApp:
    """The backend, built once, and the runs of every tab through it, one at a time."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        # The tuned model writes the format itself; a plain model gets one worked example (as the CLI).
        self.examples = None if backend.tuned else demo_examples()
        self._lock = threading.Lock()
        self._last_session: str | None = None
        self.downloads = downloads_folder()  # the tabs' transcript downloads (see serve)
        self.ttl: float | None = DOWNLOAD_TTL  # seconds a download stays; None: kept (--keep-transcripts)

    def agent(self, system_prompt: str, language: str, max_steps: int, on_event):
        prompt = (system_prompt.strip() or SYSTEM_PROMPT) + LANGUAGE_NOTE.get(language, "")
        config = AgentConfig(system_prompt=prompt, max_steps=int(max_steps))
        return pharmacist_agent(
            self.backend, config=config, examples=self.examples, on_event=on_event,
            language={"TR": "tr", "EN": "en"}.get(language),
        )  # fmt: skip

    def run(
        self, session: str, conversation: list[dict], system_prompt: str, language: str, max_steps: int
    ) -> Iterator[tuple[list[dict], list[dict] | None, str | None, str | None]]:
        """Yield (chat messages of this turn, final transcript or None, rendered PPSF or None, error or None)."""
        events: queue.Queue = queue.Queue()
        stop = threading.Event()
        outcome: dict[str, Any] = {}

        def on_event(event: Event) -> None:
            if stop.is_set():
                raise Cancelled
            events.put(event)

        def work() -> None:
            with self._lock:  # gradio queues one run at a time; the lock also guards direct callers
                try:
                    if self._last_session != session:
                        # One generator (and KV cache) for the process: another tab's cache is not this one's.
                        self.backend.generator.reset()
                        self._last_session = session
                    agent = self.agent(system_prompt, language, max_steps, on_event)
                    result = agent.run(conversation)
                    outcome["messages"] = result.messages
                    outcome["rendered"] = agent.render(result.messages)
                except Cancelled:
                    self._last_session = None
                    outcome["error"] = "Stopped."
                except (InputTooLong, ValueError) as e:
                    outcome["error"] = one_line(e)
                except Exception as e:  # a stopped backend, a failed model: the tab says so instead of hanging
                    self._last_session = None
                    outcome["error"] = f"No answer: {one_line(e)}"
                finally:
                    events.put(None)

        worker = threading.Thread(target=work, name="ppsf-web-run", daemon=True)
        worker.start()
        turn = Turn()
        try:
            while (event := events.get()) is not None:
                turn.apply(event)
                yield turn.messages, None, None, None
        finally:
            stop.set()  # a closed generator (Stop, a closed tab) ends the run at its next event
        yield turn.messages, outcome.get("messages"), outcome.get("rendered"), outcome.get("error")


def one_line(error: BaseException, limit: int = 300) -> str:
    """An error as one line of at most limit characters, for the tab's error line."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


DOWNLOAD_TTL = 600  # seconds a transcript file waits on the server for its tab to fetch it
KEEP_TRANSCRIPTS_ENV = "PPSF_KEEP_TRANSCRIPTS"  # "1": the downloads stay on disk after the app exits


def downloads_folder() -> Path:
    """This process's folder of transcript downloads (and of Gradio's copies of them, see serve)."""
    return Path(tempfile.gettempdir()) / f"ppsf-chat-{os.getpid()}"


def transcript_file(messages: list[dict], folder: Path | None = None, ttl: float | None = DOWNLOAD_TTL) -> str:
    """The conversation as JSONL in a private file for the tab to download (0600, in a 0700 folder of this
    process), encoded as the engine's transcripts are (agent.engine.transcript.json_line); files older than ttl
    seconds are deleted each time (None: kept), so nothing stays on the server for long."""
    folder = folder or downloads_folder()
    private_dir(folder)
    for old in folder.glob("*.jsonl") if ttl is not None else ():
        if time.time() - old.stat().st_mtime > ttl:
            old.unlink(missing_ok=True)
    path = folder / f"ppsf-chat-{uuid.uuid4().hex[:12]}.jsonl"
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
        f.write(b"".join(json_line(message) for message in messages))
    return str(path)


def stop_on_signals() -> None:
    """Make SIGTERM and SIGHUP a Ctrl-C, which Gradio's launch() answers by closing the server and returning: the
    process then exits as after Ctrl-C, its atexit handlers run (SIGKILL runs no code)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, interrupt)


def build(app: PharmacistApp):
    """The Gradio Blocks of the chat."""
    import gradio as gr

    with gr.Blocks(title="PPSF pharmacist", delete_cache=(600, 600)) as demo:
        session = gr.State(lambda: uuid.uuid4().hex)
        history = gr.State(list)  # the agent's conversation (OpenAI-style messages), this tab only
        gr.Markdown("# PPSF pharmacist\n" + DISCLAIMER)
        with gr.Row():
            with gr.Column(scale=3):
                chat = gr.Chatbot(label="Conversation", height=560, elem_id="chat")
                with gr.Row():
                    box = gr.Textbox(placeholder="Ask about a medicine / Bir ilaç sorun", show_label=False, scale=5,
                                     elem_id="question")  # fmt: skip
                    send = gr.Button("Send", variant="primary", scale=1, elem_id="send")
                    stop = gr.Button("Stop", scale=1, elem_id="stop")
                    new = gr.Button("New chat", scale=1, elem_id="new")
                gr.Examples(EXAMPLES, inputs=box)
                error = gr.Markdown(elem_id="error")
            with gr.Column(scale=1), gr.Accordion("Settings", open=True):
                language = gr.Radio(["auto", "TR", "EN"], value="auto", label="Answer language")
                system = gr.Textbox(SYSTEM_PROMPT, label="System prompt", lines=6)
                steps = gr.Slider(1, 8, value=5, step=1, label="Max steps")
                show_raw = gr.Checkbox(False, label="Show raw PPSF")
                download = gr.DownloadButton("Download transcript (JSONL)", value=None, elem_id="download")
        raw = gr.Code(label="Raw PPSF (the prompt the model saw, with what it wrote)", visible=False, elem_id="raw")

        def ask(question, shown, conversation, session_id, system_prompt, lang, max_steps):
            question = (question or "").strip()
            if not question:
                yield shown, conversation, "", gr.update(), "Type a question first.", gr.update()
                return
            if problem := undecodable(question):  # it could not even be shown: said in the error line instead
                yield shown, conversation, "", gr.update(), f"This message cannot be read: {problem}.", gr.update()
                return
            shown = [*shown, {"role": "user", "content": question}]
            before = list(shown)
            request = [*conversation, {"role": "user", "content": question}]
            for turn, final, rendered, problem in app.run(session_id, request, system_prompt, lang, max_steps):
                shown = before + turn
                if final is not None or problem is not None:
                    conversation = final if final is not None else conversation
                    file = transcript_file(conversation, app.downloads, app.ttl) if final is not None else None
                    yield shown, conversation, "", rendered or gr.update(), problem or "", file or gr.update()
                    return
                yield shown, conversation, "", gr.update(), "", gr.update()
            yield shown, conversation, "", gr.update(), "No answer came back: ask again.", gr.update()

        outputs = [chat, history, box, raw, error, download]
        inputs = [box, chat, history, session, system, language, steps]
        runs = [
            send.click(ask, inputs, outputs, concurrency_limit=1, concurrency_id="model"),
            box.submit(ask, inputs, outputs, concurrency_limit=1, concurrency_id="model"),
        ]
        stop.click(None, cancels=runs)
        fresh = new.click(lambda: ([], [], "", "", None), None, [chat, history, raw, error, download])
        fresh.then(lambda: uuid.uuid4().hex, None, session)  # a new session: the next run starts a fresh cache
        show_raw.change(lambda on: gr.update(visible=on), show_raw, raw)
    return demo


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python app.py`'s options: the address, the backend options the CLI shares, the downloads."""
    parser = argparse.ArgumentParser(prog="python app.py", description="The PPSF pharmacist as a Gradio chat.")
    # No defaults of our own: left unset, Gradio reads GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (which containers,
    # proxies and Spaces set), else binds 127.0.0.1 on the first free port from 7860.
    parser.add_argument("--host", help="address to bind (default: $GRADIO_SERVER_NAME, else 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default: $GRADIO_SERVER_PORT, else the first free from 7860)")
    # No prefix states on disk: the prefix holds the system prompt a visitor may type, and nothing of a visitor's
    # is stored on the server (docs/security.md).
    add_backend_options(parser, prefix_store=False)
    parser.add_argument(
        "--keep-transcripts",
        action="store_true",
        default=os.environ.get(KEEP_TRANSCRIPTS_ENV, "") not in ("", "0"),
        help=f"keep the transcript downloads on disk (in {downloads_folder().parent}/ppsf-chat-PID) after the app "
        f"exits; by default they are deleted 10 minutes after each download and all at exit (also: "
        f"{KEEP_TRANSCRIPTS_ENV}=1)",
    )
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options of `python app.py`."""
    return build_parser().parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    options = backend_options(parser, args)
    if options.backend == "local" and options.model is None and os.environ.get("SPACE_ID"):
        from .engine.models import default_adapter_dir

        # A Hugging Face Space has no bundled GGUF: the base model from the Hub, with the repo's adapter.
        adapter = str(default_adapter_dir()) if options.adapter == "auto" else options.adapter
        options = replace(options, model=SPACE_BASE_MODEL, adapter=adapter)
    try:
        backend = build_backend(options)
    except backend_errors(options.backend) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return serve(PharmacistApp(backend), host=args.host, port=args.port, keep_transcripts=args.keep_transcripts)


def serve(app: PharmacistApp, *, host: str, port: int, keep_transcripts: bool = False) -> int:
    """Run the chat until stopped. The transcript downloads, and Gradio's copies of them (GRADIO_TEMP_DIR, when
    not set), go to app.downloads, deleted when the app exits unless keep_transcripts."""
    private_dir(app.downloads)
    os.environ.setdefault("GRADIO_TEMP_DIR", str(app.downloads / "gradio"))  # read when gradio is imported
    stop_on_signals()
    if keep_transcripts:
        app.ttl = None
        print(f"Transcript downloads are kept in {app.downloads}", file=sys.stderr, flush=True)
    else:  # at a normal exit, Ctrl-C, SIGTERM or SIGHUP
        atexit.register(shutil.rmtree, app.downloads, ignore_errors=True)
    demo = build(app)
    demo.queue(default_concurrency_limit=1)
    demo.launch(server_name=host, server_port=port, show_error=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
