"""The exported model (agent.export), llama.cpp in process (--backend llamacpp) and as a server (llama_cpp.server
behind --backend openai), prefix snapshots across conversations, thread choice. Real model, real llama.cpp, a
real server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from ppsf_helpers import tuned_backend

from agent.engine.threads import choose_threads, usable_cores
from agent.ppsf import STOP_STRINGS

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
# Both languages, every tool, parallel calls and a no-tool question: the first held-out case of each kind and language.
ROUNDTRIP_INTENTS = (
    "usage",
    "interaction",
    "dose",
    "section",
    "alternatives",
    "contraindication",
    "parallel",
    "offtopic",
)


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The default model exported once: merged folder, q8_0 and q4_1 GGUFs."""
    from agent.export import export

    return export(tmp_path_factory.mktemp("export") / "ppsf", gguf=("q8_0", "q4_1"))


@pytest.fixture(scope="session")
def tuned():
    from agent.engine.models import load_model

    return load_model(device="cpu", dtype="float32")


def roundtrip_cases() -> list[dict]:
    cases = [json.loads(line) for line in (REPO / "eval" / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    picked = []
    for intent in ROUNDTRIP_INTENTS:
        for lang in ("tr", "en"):
            picked.append(next(c for c in cases if c["intent"] == intent and c["lang"] == lang))
    return picked


def first_calls(agent, cases: list[dict]) -> list[list[dict]]:
    out = []
    for case in cases:
        message = agent.next_message(case.get("messages") or case["query"])
        out.append(message.get("tool_calls") or [message])
    return out


# ---- the export ----
def test_export_writes_a_model_folder_with_the_repo_tokenizer_and_stops(exported):
    folder = exported["folder"]
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        assert (folder / name).read_bytes() == (REPO / name).read_bytes(), name
    generation = json.loads((folder / "generation_config.json").read_text())
    assert generation["do_sample"] is False and generation["eos_token_id"] == 2
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert (
        card.startswith("---\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\n")
        and "library_name: transformers" in card
    )
    assert "# PPSF agent model (merged LoRA)" in card and repr(list(STOP_STRINGS)) in card
    # The tool schemas the adapter was trained on travel with its weights (agent.engine.models.recorded_tools).
    assert (folder / "tools.json").read_bytes() == (REPO / "adapter" / "tools.json").read_bytes()
    from agent.engine.models import recorded_tools

    assert recorded_tools(folder) == recorded_tools(REPO / "adapter")


def test_the_exported_folder_runs_in_a_plain_transformers_pipeline(exported, tuned):
    """pipeline("text-generation", model=folder), greedy by the folder's own generation config, with the card's
    stop strings, given the agent's prompt (agent.prompt: the routed tools block and start): the same first call as
    the agent, and the turn ends before the prompt's next block."""
    from transformers import pipeline

    from agent.pharmacy import pharmacist_agent

    agent = pharmacist_agent(*tuned)
    prompt = agent.prompt("Parol ne işe yarar?")
    # The conversation, then the route's start of the reply (a routed model's) or nothing.
    head = prompt if prompt.endswith("\n\n") else prompt[: prompt.rindex("\n\n@") + 2]
    assert prompt[len(head) :] in ("", '@TOOL_CALL\n{\n  "name": "search_drug",\n  "arguments":')
    generate = pipeline("text-generation", model=str(exported["folder"]), device="cpu")
    stops = {"stop_strings": list(STOP_STRINGS), "tokenizer": generate.tokenizer}
    text = generate(prompt, max_new_tokens=80, return_full_text=False, **stops)[0]["generated_text"]
    # The stop string ends the turn (transformers keeps it in the text). A prompt that ends in a blank line is
    # tokenized with "\n\n" as one token, which the model never saw before "@": it writes one more newline.
    assert text.endswith("\n@TOOL_RESPONSE")
    turn = (prompt[len(head) :] + text).removesuffix("@TOOL_RESPONSE").strip()
    assert turn == '@TOOL_CALL\n{\n  "name": "search_drug",\n  "arguments": {"drug": "Parol"}\n}'
    parsed = generate.tokenizer.parse_response(turn, prefix=head, tools=agent.toolbox.schemas)
    assert parsed["tool_calls"][0]["function"] == {"name": "search_drug", "arguments": {"drug": "Parol"}}
    assert agent.next_message("Parol ne işe yarar?")["tool_calls"] == [parsed["tool_calls"][0]["function"]]


def test_the_ggufs_carry_the_ppsf_template_and_the_smollm_tokenizer(exported):
    import gguf

    for kind in ("q8_0", "q4_1"):
        reader = gguf.GGUFReader(str(exported[kind]))
        assert reader.fields["tokenizer.chat_template"].contents() == (REPO / "chat_template.jinja").read_text(
            encoding="utf-8"
        )
        assert reader.fields["tokenizer.ggml.pre"].contents() == "smollm"
    assert exported["q4_1"].stat().st_size < 0.75 * exported["q8_0"].stat().st_size


def test_export_says_what_is_missing(tmp_path):
    from agent.export import ExportError, export

    with pytest.raises(ExportError, match="convert_hf_to_gguf.py"):
        export(tmp_path / "out", converter=tmp_path / "nowhere.py")
    with pytest.raises(ValueError, match="unknown GGUF type"):
        export(tmp_path / "out", gguf=("q3_x",))
    base_read = tmp_path / "adapter"  # an adapter whose prefix the base model read in training: not mergeable
    base_read.mkdir()
    (base_read / "adapter_config.json").write_text("{}", encoding="utf-8")
    (base_read / "training_info.json").write_text('{"base_prefix": true}', encoding="utf-8")
    with pytest.raises(ExportError, match="read by the base model"):
        export(tmp_path / "out", adapter=str(base_read))
    assert not (tmp_path / "out").exists()


def _repo_files(root: Path) -> Path:
    """The files of this repo that an export copies, as real files in a folder of their own."""
    from agent.export import NAMED_TEMPLATES, TOKENIZER_FILES

    for name in (*TOKENIZER_FILES, f"{NAMED_TEMPLATES}/train.jinja"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes((REPO / name).read_bytes())
    return root


@pytest.mark.parametrize(
    ("name", "link"),
    [
        ("chat_template.jinja", "symbolic"),
        ("chat_template.jinja", "hard"),
        ("additional_chat_templates/train.jinja", "symbolic"),
        ("additional_chat_templates/train.jinja", "hard"),
        ("folder", "symbolic"),  # a folder cannot be hard-linked
    ],
)
def test_export_refuses_a_linked_file_and_copies_nothing_it_points_to(tmp_path, name, link):
    """A template linked to a token file used to be exported with the token in it, and upload.py --model sent it."""
    from agent.export import ExportError, copy_repo_files

    repo = _repo_files(tmp_path / "repo")
    secret = tmp_path / "outside" / "token.txt"
    secret.parent.mkdir()
    secret.write_text("hf_SECRETSECRETSECRET\n", encoding="utf-8")
    copy_repo_files(tmp_path / "plain", repo)  # plain files: copied byte for byte
    assert (tmp_path / "plain" / "chat_template.jinja").read_bytes() == (REPO / "chat_template.jinja").read_bytes()
    if name == "folder":  # the named templates' folder itself a link to a folder elsewhere
        shutil.move(repo / "additional_chat_templates", tmp_path / "outside" / "templates")
        (tmp_path / "outside" / "templates" / "leak.jinja").write_text("hf_SECRETSECRETSECRET", encoding="utf-8")
        (repo / "additional_chat_templates").symlink_to(tmp_path / "outside" / "templates")
        name = "additional_chat_templates"
    else:
        (repo / name).unlink()
        (repo / name).symlink_to(secret) if link == "symbolic" else os.link(secret, repo / name)
    out = tmp_path / "out"
    with pytest.raises(ExportError, match=f"{name} (is a symbolic link|has 2 hard links)") as raised:
        copy_repo_files(out, repo)
    assert str(repo / name) in str(raised.value)
    assert not any("SECRET" in p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file())


def test_export_round_trips_first_calls_on_eval_cases(exported, tuned):
    """The agent (adapter merged at load), the exported folder and its q8_0 GGUF on llama.cpp write the same first
    message on held-out cases of every intent in both languages."""
    from agent.engine.llamacpp_backend import LlamaCppGenerator, load_llama
    from agent.engine.models import load_model
    from agent.pharmacy import pharmacist_agent
    from agent.ppsf import load_tokenizer

    cases = roundtrip_cases()
    reference = first_calls(pharmacist_agent(*tuned), cases)
    assert sum("name" in calls[0] for calls in reference) >= len(cases) - 2  # all but the off-topic ones call tools
    folder = first_calls(pharmacist_agent(*load_model(str(exported["folder"]), device="cpu", adapter=None)), cases)
    assert folder == reference
    tokenizer = load_tokenizer()
    generator = LlamaCppGenerator(load_llama(exported["q8_0"], threads=1), tokenizer)
    assert first_calls(pharmacist_agent(tuned_backend(generator, tokenizer)), cases) == reference


# ---- llama.cpp in process ----
@pytest.fixture(scope="module")
def llama_generator(exported):
    from agent.engine.llamacpp_backend import LlamaCppGenerator, load_llama
    from agent.ppsf import load_tokenizer

    return LlamaCppGenerator(load_llama(exported["q8_0"], threads=1), load_tokenizer())


@pytest.mark.parametrize("backend", ["torch", "llamacpp"])
def test_a_new_conversation_starts_from_the_prefix_snapshot(backend, tuned, llama_generator):
    """After reset() (a new conversation), the fixed prefix (header, system prompt, tools) is not prefilled again,
    and the answer is the one an empty cache gives."""
    from agent.engine.generation import CachedGenerator
    from agent.pharmacy import pharmacist_agent

    generator = llama_generator if backend == "llamacpp" else CachedGenerator(*tuned)
    generator.clear()
    agent = pharmacist_agent(tuned_backend(generator, tuned[1]))
    first = agent.run("Parol ne işe yarar?")
    assert first.stats.steps[0].cached_tokens == 0
    (prefix,) = generator.prefixes
    assert 0 < prefix < first.stats.steps[0].prompt_tokens
    generator.reset()
    assert generator.cached_ids == []
    second = agent.next_message("What is Majezik used for?")
    cached = generator.cached_ids
    assert cached[:prefix] == list(
        agent.generator.encode(agent.render([{"role": "system", "content": agent.config.system_prompt}]), "@")
    )
    generator.clear()  # the same question from nothing
    assert agent.next_message("What is Majezik used for?") == second
    assert second["tool_calls"] == [{"name": "search_drug", "arguments": {"drug": "Majezik"}}]


def test_prefix_snapshots_are_counted_once_and_bounded(tuned):
    from agent.engine.generation import CachedGenerator
    from agent.pharmacy import pharmacist_agent

    generator = CachedGenerator(*tuned)
    agent = pharmacist_agent(tuned_backend(generator, tuned[1]))
    runs = []
    for question in ("Parol ne işe yarar?", "Nurofen ne işe yarar?"):
        generator.reset()
        runs.append(agent.next_message(question))
    assert len(generator.prefixes) == 1
    for i in range(generator.max_prefixes + 2):  # other system prompts: their own snapshots, oldest dropped
        generator.cache_prefix(f"@FORMAT PPSF/1.0\n\n@SYSTEM\nprompt {i}\n\n", "@")
    assert len(generator.prefixes) == generator.max_prefixes


@pytest.mark.parametrize("backend", ["torch", "llamacpp"])
def test_a_new_process_starts_from_the_prefix_state_on_disk(backend, tuned, exported, tmp_path):
    """A generator with a prefix store files the prefix's state; a new one (another process's) starts its first
    conversation from it, with the same call; another model's state, or a damaged file, is not used."""
    from agent.engine.generation import CachedGenerator
    from agent.engine.llamacpp_backend import LlamaCppGenerator, load_llama
    from agent.engine.models import load_model
    from agent.engine.prefix_store import PrefixStore
    from agent.pharmacy import pharmacist_agent
    from agent.ppsf import load_tokenizer

    def fresh(model: str = "tuned"):
        store = PrefixStore(tmp_path / "prefixes")
        if backend == "llamacpp":
            gguf = exported["q8_0"] if model == "tuned" else exported["q4_1"]
            return LlamaCppGenerator(load_llama(gguf, threads=1), load_tokenizer(), prefix_store=store)
        weights = tuned if model == "tuned" else load_model(adapter=None, dtype="float32")
        return CachedGenerator(*weights, prefix_store=store)

    def first_call(result) -> list:
        return next(m for m in result.messages if m["role"] == "assistant")["tool_calls"]

    question = "Parol ne işe yarar?"
    first = fresh()
    agent = pharmacist_agent(tuned_backend(first, load_tokenizer()))
    call = first_call(agent.run(question))
    (state,) = (tmp_path / "prefixes").glob("*.kv")
    (prefix,) = first.prefixes
    second = fresh()
    agent = pharmacist_agent(tuned_backend(second, load_tokenizer()))
    result = agent.run(question)
    assert first_call(result) == call and result.stats.steps[0].cached_tokens == prefix  # nothing prefilled twice
    other = fresh("other")  # other weights: its own state, not the tuned model's
    pharmacist_agent(tuned_backend(other, load_tokenizer())).next_message(question)
    assert len(list((tmp_path / "prefixes").glob("*.kv"))) == 2
    state.write_bytes(state.read_bytes()[:100])  # damaged: dropped, the prefix computed (and filed) again
    third = fresh()
    result = pharmacist_agent(tuned_backend(third, load_tokenizer())).run(question)
    assert first_call(result) == call and result.stats.steps[0].cached_tokens == 0
    assert state.stat().st_size > 100


def test_llamacpp_backend_streams_and_stops_like_the_local_one(llama_generator):
    from agent.pharmacy import pharmacist_agent
    from agent.ppsf import load_tokenizer

    events = []
    agent = pharmacist_agent(tuned_backend(llama_generator, load_tokenizer()), on_event=events.append)
    result = agent.run("Aspirin ile Coumadin birlikte kullanılır mı?")
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls[0]["name"] == "check_interactions" and calls[0]["arguments"] == {"drugs": ["Aspirin", "Coumadin"]}
    # Prose is not streamed (it is shown once checked): the final event carries the answer, as on the local backend.
    assert not [e for e in events if e["type"] == "text" and e["field"] == "content"]
    assert events[-1]["type"] == "final" and "kontrendike" in events[-1]["message"]["content"]
    first = result.stats.steps[0]
    assert first.stop_reason == "tool_call"


def test_llamacpp_refuses_a_gguf_of_another_vocabulary(llama_generator):
    from transformers import AutoTokenizer

    from agent.engine.llamacpp_backend import LlamaCppGenerator

    other = AutoTokenizer.from_pretrained(REPO)
    other.add_tokens(["<extra-token>"])
    with pytest.raises(ValueError, match="not the same model"):
        LlamaCppGenerator(llama_generator.model, other)


def test_cli_llamacpp_backend(exported, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "agent", "--backend", "llamacpp", "--gguf", str(exported["q8_0"]), "--threads", "1",
         "--json", "--transcript", str(tmp_path / "t.jsonl"), "What is Majezik used for?"],
        capture_output=True, text=True, env=ENV, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    messages = json.loads(done.stdout)["messages"]
    (call,) = next(m["tool_calls"] for m in messages if m.get("tool_calls"))
    assert call["function"]["arguments"] == '{"drug": "Majezik"}'
    assert "Flurbiprofen" in messages[-1]["content"]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--gguf", "x.gguf", "q"], "--gguf needs --backend llamacpp"),
        (["--backend", "llamacpp", "--model", "m", "q"], "--backend llamacpp takes --gguf"),
        (["--backend", "openai", "--threads", "2", "q"], "--threads is for the local and llamacpp backends"),
        (["--backend", "llamacpp", "--gguf", "/nonexistent/m.gguf", "q"], "no GGUF at /nonexistent/m.gguf"),
    ],
)
def test_cli_engine_options_are_checked(args, error):
    done = subprocess.run(
        [sys.executable, "-m", "agent", *args], capture_output=True, text=True, env=ENV, cwd=REPO, timeout=120
    )
    assert done.returncode == 2 and error in done.stderr, done.stderr


# ---- llama.cpp as a server ----
@pytest.fixture(scope="module")
def llama_server(exported, tmp_path_factory: pytest.TempPathFactory):
    """`python -m llama_cpp.server` on the exported q8_0 GGUF, on 127.0.0.1; stopped after the module."""
    from servers import free_port, running

    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(exported["q8_0"]), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", "8192", "--n_threads", "1"]  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                return json.load(response)["data"][0]["id"] == str(exported["q8_0"])
        except OSError:
            return False

    # Its log goes to a file: llama.cpp logs every load and request, and a full pipe would stall the server.
    with running(command, ENV, tmp_path_factory.mktemp("llama-server") / "server.log", ready, timeout=120):
        yield url


def test_the_agent_runs_against_llama_cpp_server(llama_server, tmp_path):
    """--backend openai against llama.cpp's own server on the exported GGUF: the same calls, the answer from the
    tool, and the server stopped at the format's stop strings."""
    done = subprocess.run(
        [sys.executable, "-m", "agent", "--backend", "openai", "--base-url", llama_server, "--json",
         "--transcript", str(tmp_path / "t.jsonl"), "Aspirin ile Coumadin birlikte kullanılır mı?"],
        capture_output=True, text=True, env=ENV, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    messages = json.loads(done.stdout)["messages"]
    calls = [c["function"] for m in messages for c in m.get("tool_calls") or []]
    assert (calls[0]["name"], json.loads(calls[0]["arguments"])) == (
        "check_interactions",
        {"drugs": ["Aspirin", "Coumadin"]},
    )
    assert any(m["role"] == "tool" for m in messages) and "kontrendike" in messages[-1]["content"]


def test_server_first_calls_match_the_in_process_engine(llama_server, llama_generator, exported):
    from agent.engine.openai_backend import OpenAIGenerator
    from agent.pharmacy import pharmacist_agent
    from agent.ppsf import load_tokenizer

    tokenizer = load_tokenizer()
    cases = roundtrip_cases()[:6]
    local = first_calls(pharmacist_agent(tuned_backend(llama_generator, tokenizer), grounded_names=False), cases)
    remote = OpenAIGenerator(None, tokenizer, base_url=llama_server, token_prompt=False)
    assert remote.model == str(exported["q8_0"])  # the path it loaded: the agent reads tools.json beside it
    assert first_calls(pharmacist_agent(tuned_backend(remote, tokenizer)), cases) == local


# ---- threads ----
def test_threads_are_the_idle_usable_cores():
    assert choose_threads(3) == 3
    assert 1 <= choose_threads() <= usable_cores()
    with pytest.raises(ValueError, match="threads must be >= 1"):
        choose_threads(0)


def test_the_converter_comes_from_the_llama_cpp_python_release_we_build():
    """The Makefile extracts convert_hf_to_gguf.py from the same llama-cpp-python version pyproject pins."""
    import re

    pinned = re.findall(r"llama-cpp-python\[server\]==([0-9.]+)", (REPO / "pyproject.toml").read_text())
    extracted = re.findall(r"^LLAMA_CPP_PYTHON := ([0-9.]+)$", (REPO / "Makefile").read_text(), re.M)
    assert pinned and set(pinned) == set(extracted)
    import llama_cpp

    assert llama_cpp.__version__ == extracted[0]


# ---- prompt-lookup drafts ----
def test_lookup_proposes_what_followed_the_latest_repeat_of_the_last_three_ids():
    from agent.engine.generation import lookup

    assert lookup([1, 2, 3, 4, 5, 9, 1, 2, 3], 2) == [4, 5]
    assert lookup([1, 2, 3, 4, 1, 2, 3, 7, 1, 2, 3], 5) == [7, 1, 2, 3]  # the latest repeat, up to the end
    assert lookup([1, 2, 3, 4, 5, 6], 3) == []  # nothing repeats
    assert lookup([2, 3, 9, 1, 2, 3], 3) == []  # a 2-gram is not enough
    assert lookup([1, 2, 3], 3) == []


@pytest.mark.parametrize("backend", ["torch", "llamacpp"])
def test_drafts_change_nothing_but_the_number_of_forward_passes(backend, tuned, llama_generator):
    """Greedy runs with prompt-lookup drafts (checked by the model, grounding applied at every position) give
    the very messages of one-token steps; the calls' arguments, copied from the question, are mostly drafted (the
    router writes each call's start, the tools write the answer)."""
    from agent.engine.generation import CachedGenerator
    from agent.pharmacy import pharmacist_agent

    generator = llama_generator if backend == "llamacpp" else CachedGenerator(*tuned)
    runs, drafts = [], []
    generate = generator.generate

    def counting(*args, **kwargs):
        result = generate(*args, **kwargs)
        drafts[-1] += result.drafted_tokens
        return result

    generator.generate = counting
    try:
        for draft in (0, 6):
            generator.clear()
            generator.draft_tokens, drafts = draft, [*drafts, 0]
            generator.lookup_ngram = 3  # drafts at most positions: the check covers many accepted and refused
            result = pharmacist_agent(tuned_backend(generator, tuned[1])).run(
                "Aspirin ile Coumadin birlikte kullanılır mı?"
            )
            runs.append(result)
    finally:
        del generator.generate
        generator.draft_tokens = type(generator).draft_tokens
        generator.lookup_ngram = type(generator).lookup_ngram
    assert drafts[0] == 0 and drafts[1] > 10
    plain, drafted = runs
    assert drafted.messages == plain.messages
    assert [s.decoded_tokens for s in drafted.stats.steps] == [s.decoded_tokens for s in plain.stats.steps]
    assert "kontrendike" in drafted.message["content"]


# ---- publishing the export ----
@pytest.fixture(scope="module")
def upload():
    """upload.py as a module (it is a script at the repo root, not part of the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ppsf_upload_engines", REPO / "upload.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_upload_model_dry_run_lists_the_export_and_validates_it(exported, upload, capsys):
    argv = ["--repo-id", "someone/ppsf-model", "--model", str(exported["folder"]), "--dry-run"]
    assert upload.main(argv) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  ")}
    assert listed == {*upload.MODEL_REQUIRED, "tools.json", "additional_chat_templates/train.jinja",
                      "gguf/ppsf-smollm2-135m-q8_0.gguf", "gguf/ppsf-smollm2-135m-q4_1.gguf"}  # fmt: skip
    assert "Validation: OK" in out


def test_upload_model_refuses_links_drift_and_a_bad_card(exported, upload, tmp_path):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(exported["folder"], folder, ignore=shutil.ignore_patterns("*.gguf", "model.safetensors"))
    (folder / "model.safetensors").symlink_to(exported["folder"] / "model.safetensors")
    (folder / "chat_template.jinja").write_text("{{ messages }}", encoding="utf-8")
    problems = upload.validate_model(folder)
    assert any("model.safetensors is a symbolic link" in p for p in problems)
    (folder / "model.safetensors").unlink()
    shutil.copyfile(exported["folder"] / "model.safetensors", folder / "model.safetensors")
    card = (folder / "README.md").read_text(encoding="utf-8")
    (folder / "README.md").write_text(
        card.replace("library_name: transformers", "library_name: peft"), encoding="utf-8"
    )
    problems = upload.validate_model(folder)
    assert any("chat_template.jinja differs from this repo's" in p for p in problems)
    assert any("library_name: transformers" in p for p in problems)


def test_upload_model_sends_the_listed_files_to_a_model_repo(exported, upload):
    calls = {}

    class Api:
        def create_repo(self, repo_id, **kwargs):
            calls["repo"] = (repo_id, kwargs)

        def create_commit(self, repo_id, operations, **kwargs):
            calls["commit"] = ({op.path_in_repo for op in operations}, kwargs)

            class Info:
                commit_url = "https://huggingface.co/someone/ppsf-model/commit/1"

            return Info()

    url = upload.upload_model(exported["folder"], "someone/ppsf-model", token="hf_x", api=Api())
    assert url.endswith("/commit/1") and calls["repo"][1]["repo_type"] == "model"
    assert {*upload.MODEL_REQUIRED, "gguf/ppsf-smollm2-135m-q8_0.gguf"} <= calls["commit"][0]


def test_the_default_export_is_made_again_when_it_is_stale(tmp_path, monkeypatch):
    """A cached default export from another adapter or an older agent.export is not served: it is exported again."""
    from agent import export

    monkeypatch.setenv("PPSF_CACHE", str(tmp_path))
    made = []
    monkeypatch.setattr(export, "export", lambda out, gguf: made.append(out) or _fake_export(out, gguf))
    first = export.default_gguf()
    assert export.default_gguf() == first and len(made) == 1  # fresh: reused
    info = export.default_export_dir() / export.INFO_FILE
    version = export.EXPORT_VERSION
    info.write_text(info.read_text().replace(f'"export_version": {version}', f'"export_version": {version - 1}'))
    assert export.default_gguf() == first and len(made) == 2


def _fake_export(out, gguf):
    from agent import export

    (out / "gguf").mkdir(parents=True)
    (out / "gguf" / f"{export.DEFAULT_EXPORT}-{gguf[0]}.gguf").write_bytes(b"GGUF")
    info = export.export_info(None, "auto", "float32")
    (out / export.INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def test_a_conversation_without_system_prompt_or_examples_runs_without_a_snapshot(tuned):
    from agent.engine.agent import AgentConfig
    from agent.engine.generation import CachedGenerator
    from agent.pharmacy import pharmacist_agent

    generator = CachedGenerator(*tuned)
    agent = pharmacist_agent(
        tuned_backend(generator, tuned[1]), config=AgentConfig(system_prompt="", max_new_tokens=24)
    )
    assert "role" in agent.next_message("Parol ne işe yarar?")
    assert generator.prefixes == []


def test_the_draft_cost_bench_prints_a_row_per_engine_and_gguf(exported, capsys):
    """bench/batch_cost.py, which sets each engine's draft length: one row per engine, a cell per batch size."""
    import batch_cost  # bench/, on sys.path (conftest)

    gguf = str(exported["q8_0"])
    argv = ["--engines", "torch,llamacpp", "--gguf", gguf, "--sizes", "1,3", "--repeats", "1", "--threads", "1"]
    assert batch_cost.main(argv) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("| torch", "| llama.cpp"))]
    assert [row.split(" | ")[0] for row in rows] == ["| torch fp32", f"| llama.cpp {exported['q8_0'].stem}"]
    assert all(row.count("x)") == 2 for row in rows)
