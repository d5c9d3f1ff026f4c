"""agent.engine.generation: stop detection, incremental decoding, KV-cache reuse and token-exact stops."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.engine.generation import (
    FOREIGN_MARKERS,
    CachedGenerator,
    IncrementalDecoder,
    Stop,
    StopDetector,
    call_probe,
    common_prefix_len,
)
from agent.engine.grounding import GroundedNames
from agent.engine.models import load_model

PROMPT = (
    "@FORMAT PPSF/1.0\n\n@SYSTEM\nSen bir eczane asistanısın. Kısa ve doğru yanıt ver.\n\n"
    '@TOOLS\n[{"name": "search_drug", "parameters": {"drug": "string"}}]\n\n'
    "@PATIENT\nParol ne işe yarar? Günde kaç tane içebilirim?\n\n"
)


def detect(*pieces: str) -> Stop | None:
    detector = StopDetector()
    for piece in pieces:
        stop = detector.feed(piece)
    return stop


def json_end(text: str) -> int:
    """Index just past the first JSON object in text (the reference for the brace tracker)."""
    start = text.index("{")
    return json.JSONDecoder().raw_decode(text, start)[1]


# --- StopDetector: pure text in, decision out -----------------------------------------------------------------

TOOL_CALLS = [
    '@TOOL_CALL\n{\n  "name": "search_drug",\n  "arguments": {"drug": "Parol"}\n}',
    '@TOOL_CALL\n{"name": "x", "arguments": {"q": "a } b { c"}}',
    '@TOOL_CALL\n{"name": "x", "arguments": {"q": "say \\"}\\" and \\\\", "r": "\\\\\\""}}',
    '@TOOL_CALL\n{"name": "x", "arguments": {"a": {"b": [1, {"c": {}}]}, "d": "{{"}}',
    '@THOUGHT\nAra.\n\n@TOOL_CALL\n{"name": "search_drug", "arguments": {"drug": "Ağrı kesici — Привет 💊 }"}}',
    '@TOOL_CALL  \n\n{"name": "x", "arguments": {}}',
]


@pytest.mark.parametrize("call", TOOL_CALLS)
def test_tool_call_stops_at_the_closing_brace(call: str):
    """The stop's cut is right after the brace; what decides it is the next block's marker."""
    text = call + "\n\n@TOOL_RESPONSE\n{}"
    assert detect(text) == Stop("tool_call", json_end(call)) == Stop("tool_call", len(call))
    json.loads(call[call.index("{") :])  # the cut leaves exactly one valid object


def test_tool_call_stop_fed_character_by_character():
    call = TOOL_CALLS[2]
    detector = StopDetector()
    stops = [detector.feed(ch) for ch in call + "\n\nmore"]
    # Decided on the "m": until then a second @TOOL_CALL could have followed.
    assert stops.index(Stop("tool_call", len(call))) == len(call + "\n\n")
    assert detector.safe_len == len(call)


PARALLEL = '@TOOL_CALL\n{"name": "a", "arguments": {}}\n\n@TOOL_CALL\n{"name": "b", "arguments": {"x": "}"}}'


@pytest.mark.parametrize(
    "after",
    ["\n\n@TOOL_RESPONSE\n{}", "\n\n@PATIENT\n", "\n\n@PHARMACIST\nx", "\n\nmetin", " metin", "\n@TOOL_CALLS\n"],
)
def test_parallel_tool_calls_stop_after_the_last(after: str):
    assert detect(PARALLEL + after) == Stop("tool_call", len(PARALLEL))
    assert detect(*PARALLEL, *after) == Stop("tool_call", len(PARALLEL))  # a character at a time


def test_closed_call_waits_for_a_possible_next_one():
    first = PARALLEL[: PARALLEL.index("}}") + 2]
    detector = StopDetector()
    for text in (first, "\n", "\n@TOOL_", "CALL "):
        assert detector.feed(text) is None
        assert detector.safe_len == len(first)  # nothing after the first call is shown yet
    assert detector.feed("\n{") is None
    assert detector.safe_len == len(detector.text)  # the second call is confirmed
    assert detector.finish() is None  # an unfinished second call is no stop


@pytest.mark.parametrize("tail", ["", "\n\n", "\n\n@TOOL_C"])
def test_finish_after_a_closed_call_is_the_tool_call_stop(tail: str):
    detector = StopDetector()
    assert detector.feed(PARALLEL + tail) is None
    assert detector.finish() == Stop("tool_call", len(PARALLEL)) == detector.stop


@pytest.mark.parametrize(
    "text",
    [
        '@THOUGHT\n{"name": "x"}\n',  # JSON outside a tool call
        'x @TOOL_CALL\n{"name": "x"}',  # header not at a line start
        '\\@TOOL_CALL\n{"name": "x"}',  # escaped header
        '@TOOL_CALL\n{"name": "x", "arguments": {"q": "}"}',  # not closed yet
        '@TOOL_CALLS\n{"name": "x"}',  # not the header
    ],
)
def test_no_tool_call_stop(text: str):
    assert detect(text) is None


@pytest.mark.parametrize(
    ("marker", "decided_at"),
    [
        ("@PATIENT", "@PA"),
        ("@TOOL_RESPONSE", "@TOOL_R"),
        ("@SYSTEM", "@S"),
        ("@REFERENCE", "@R"),
        ("@TOOLS", "@TOOLS"),
        ("@FORMAT", "@F"),
    ],
)
def test_foreign_marker_decided_at_shortest_unambiguous_prefix(marker: str, decided_at: str):
    assert marker in FOREIGN_MARKERS
    head = "@PHARMACIST\nParol ağrı kesicidir.\n\n"
    detector = StopDetector()
    detector.feed(head)
    fed = ""
    for ch in marker + "\nmetin":
        fed += ch
        if detector.feed(ch) is not None:
            break
    assert fed == decided_at
    assert detector.stop == Stop("foreign_block", len(head.rstrip("\n")))


@pytest.mark.parametrize(
    ("text", "cut"),
    [
        ("@PATIENT\n", 0),
        ("@PHARMACIST\nhi\n@SYSTEM", len("@PHARMACIST\nhi")),
        ("@PHARMACIST\nhi\n\n\n@TOOL_RESPONSE\n", len("@PHARMACIST\nhi")),
        ('@TOOL_CALL\n\n@PATIENT\n{"a": 1}', len("@TOOL_CALL")),
    ],
)
def test_foreign_block_cut(text: str, cut: int):
    assert detect(text) == Stop("foreign_block", cut)


@pytest.mark.parametrize(
    "text",
    [
        "@PHARMACIST\nBkz. @PATIENT notu.\n",  # mid-line
        "@PHARMACIST\n\\@PATIENT bir satır\n",  # escaped
        "@PHARMACIST\n @SYSTEM\n",  # indented
        "@THOUGHT\nx\n\n@PHARMACIST\ny\n\n@TOOL_CALL\n",  # own markers only
        "@PHARMACIST\nemail@SYSTEM.com\n@",  # a lone "@" is still ambiguous
        "@PHARMACIST\n@TOOL_\n",
    ],
)
def test_no_foreign_stop(text: str):
    assert detect(text) is None


@pytest.mark.parametrize(
    "head, tail",
    [
        ("@PHARMACIST\nParol ağrı kesicidir.", "\n\n@PHARMACIST\nParol ağrı kesicidir."),  # the run-on answer
        ("@PHARMACIST\nTamam.", "\n\n@THOUGHT\nhmm"),  # reasoning comes before the answer, never after
        ("@THOUGHT\na\n\n@PHARMACIST\nb", "\n@THOUGHT\n"),
        ("@THOUGHT\na", "\n\n@THOUGHT\nb"),
    ],
)
def test_next_turn_cut(head: str, tail: str):
    assert detect(head + tail) == Stop("next_turn", len(head))
    assert detect(head, *tail) == Stop("next_turn", len(head))  # fed a character at a time


def test_generation_prompt_counts_as_the_answer_block():
    prompt = "@PATIENT\nParol nedir?\n\n@PHARMACIST"  # add_generation_prompt=True (the agent's final answer)
    detector = StopDetector(prompt)
    answer = "\nParol bir ağrı kesicidir."
    assert detector.feed(answer + "\n\n@PHARMACIST\nParol") == Stop("next_turn", len(answer))
    assert StopDetector("@PATIENT\nParol nedir?\n\n").feed("@PHARMACIST\nParol\n\n@TOOL_CALL\n") is None


def test_answer_then_tool_call_is_one_turn():
    assert detect("@PHARMACIST\nBakıyorum.\n\n@TOOL_CALL\n") is None


def test_marker_split_across_chunks():
    answer = "@PHARMACIST\nTamam."
    assert detect(answer + "\n", "\n@", "P", "ATI", "ENT\n") == Stop("foreign_block", len(answer))
    call = '@TOOL_CALL\n{"a": "}"}'
    assert detect("@TOOL_", 'CALL\n{"a": "}', '"', "}", "\n", "\n@", "TOOL_R") == Stop("tool_call", len(call))


SAMPLES = [
    "@PHARMACIST\nParol ağrı kesicidir; Привет, дозировка 500 мг.\n\n@PATIENT\nSağ ol\n",
    TOOL_CALLS[4] + "\n\n@TOOL_RESPONSE\n{}",
    '@THOUGHT\nemail@x.com {"a": 1}\n\n@TOOL_CALL\n' + '{"name": "a", "arguments": {"s": "\\"}{"}}\n@SYSTEM',
    "@PHARMACIST\nyalnızca cevap \\@PATIENT değil\n",
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SAMPLES), st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_any_split_gives_the_same_stop(text: str, cuts: list[int]):
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    assert detect(*pieces) == detect(text)


def test_safe_len_holds_back_a_forming_marker():
    detector = StopDetector()
    detector.feed("@PHARMACIST\nMerhaba\n\n")
    assert detector.safe_len == len("@PHARMACIST\nMerhaba")  # the blank line may precede a foreign block
    detector.feed("@TO")
    assert detector.safe_len == len("@PHARMACIST\nMerhaba")  # @TOOL_CALL or @TOOL_RESPONSE / @TOOLS
    detector.feed("OL_C")  # @TOOL_C: the model's own @TOOL_CALL
    assert detector.safe_len == len(detector.text)


def test_safe_len_never_shows_the_next_turn():
    detector = StopDetector()
    detector.feed("@PHARMACIST\nMerhaba\n\n@P")
    assert detector.safe_len == len("@PHARMACIST\nMerhaba")
    assert detector.feed("H") == Stop("next_turn", len("@PHARMACIST\nMerhaba"))
    assert detector.safe_len == len("@PHARMACIST\nMerhaba")


# --- IncrementalDecoder ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["Parol ağrı kesicidir. İyi günler, ĞÜŞİÖÇ!", "Привет, как дела? 💊 Готово."])
def test_incremental_decoder_multibyte(smollm_tokenizer, text: str):
    ids = smollm_tokenizer(text, add_special_tokens=False)["input_ids"]
    decoder = IncrementalDecoder(smollm_tokenizer)
    pieces = [decoder.add(i) for i in ids]
    assert "".join(pieces) + decoder.flush() == text
    assert not any("\ufffd" in p for p in pieces)
    assert "" in pieces  # some character really was split across tokens
    assert decoder.committed == len(ids)


def test_incremental_decoder_flushes_a_partial_character(smollm_tokenizer):
    ids = smollm_tokenizer("AП", add_special_tokens=False)["input_ids"]  # "П" is two byte tokens
    decoder = IncrementalDecoder(smollm_tokenizer)
    assert [decoder.add(i) for i in ids[:-1]] == ["A", ""]
    assert decoder.flush() == "\ufffd"


# --- CachedGenerator on a tiny random Llama ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path):
    return load_model(str(tiny_model_dir), device="cpu", dtype="float32")


def reference_ids(lm, tokenizer, prompt: str, n: int) -> list[int]:
    """Greedy continuation from a fresh, cache-less model.generate run."""
    ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
    out = lm.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False)
    return out[0, ids.shape[1] :].tolist()


def check_step(generator: CachedGenerator, prompt: str, max_new_tokens: int = 24):
    """Generate one step; assert it equals a fresh run token for token and the cache is consistent."""
    lm, tokenizer = generator.model, generator.tokenizer
    result = generator.generate(prompt, max_new_tokens=max_new_tokens)
    assert result.token_ids == reference_ids(lm, tokenizer, prompt, result.decoded_tokens)
    fresh = CachedGenerator(lm, tokenizer).generate(prompt, max_new_tokens=max_new_tokens)
    assert (fresh.text, fresh.token_ids, fresh.cached_tokens) == (result.text, result.token_ids, 0)
    assert result.prefill_tokens + result.cached_tokens == result.prompt_tokens
    assert generator._cache.get_seq_length() == len(generator.cached_ids)
    return result


def test_kv_reuse_is_exact_over_a_conversation(tiny):
    generator = CachedGenerator(*tiny)
    tokenizer = generator.tokenizer
    r1 = check_step(generator, PROMPT)
    assert r1.cached_tokens == 0

    prompt2 = PROMPT + r1.text + '\n\n@TOOL_RESPONSE\n{"drug": "Parol", "use": "ağrı, ateş"}\n\n'
    r2 = check_step(generator, prompt2)
    assert r2.cached_tokens >= len(tokenizer(PROMPT, add_special_tokens=False)["input_ids"]) - 1
    assert r2.prefill_tokens < r2.prompt_tokens / 2

    prompt3 = prompt2 + r2.text + "\n\n@PATIENT\nТеşekkürler! Peki çocuklar için?\n\n"
    r3 = check_step(generator, prompt3)
    assert r3.cached_tokens >= r2.prompt_tokens - 1

    # Diverge in the middle of the first prompt: the cache is cropped back to the common prefix.
    diverged = PROMPT[: PROMPT.index("Parol")] + "İbuprofen mide yapar mı?\n\n"
    shared = common_prefix_len(
        tokenizer(diverged, add_special_tokens=False)["input_ids"],
        tokenizer(PROMPT, add_special_tokens=False)["input_ids"],
    )
    r4 = check_step(generator, diverged)
    assert 0 < r4.cached_tokens == shared < r3.prompt_tokens

    # The same prompt again: everything but the last token comes from the cache.
    r5 = check_step(generator, diverged)
    assert (r5.cached_tokens, r5.prefill_tokens, r5.token_ids) == (r5.prompt_tokens - 1, 1, r4.token_ids)


def test_a_cache_that_cannot_roll_back_is_prefilled_again_not_emptied(tiny, monkeypatch):
    """Sliding-window layers may refuse crop(): the kept ids are prefilled again, so a draft dropped mid-answer
    leaves the context in place (drafts on: greedy output equals a fresh, cache-less run)."""
    generator = CachedGenerator(*tiny)
    generator.draft_tokens = 6
    generator.generate(PROMPT, max_new_tokens=4)  # a cache to cut
    kept = generator.cached_ids[:-3]

    def refuse(self, max_length):
        raise ValueError("this layer cannot roll back")

    monkeypatch.setattr(type(generator._cache), "crop", refuse)
    generator._crop(len(kept))
    assert generator.cached_ids == kept and generator._cache.get_seq_length() == len(kept)
    check_step(generator, PROMPT + "Parol ne işe yarar? Parol ne işe yarar?", max_new_tokens=24)


def test_seeded_sampling_is_reproducible(tiny):
    generator = CachedGenerator(*tiny)
    runs = [generator.generate(PROMPT, 12, temperature=1.0, top_p=0.9, seed=s).token_ids for s in (7, 7, 8)]
    assert runs[0] == runs[1] != runs[2]


def test_bad_arguments(tiny):
    generator = CachedGenerator(*tiny)
    with pytest.raises(ValueError, match="empty"):
        generator.generate("")
    with pytest.raises(ValueError, match="temperature"):
        generator.generate(PROMPT, temperature=-1)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generator.generate(PROMPT, max_new_tokens=0)


# --- Stops on scripted output: the forward pass is the real one, the logits pick the next scripted token ------


@pytest.fixture
def scripted(tiny, monkeypatch: pytest.MonkeyPatch):
    """Returns script(ids) -> list of forward-call lengths; the model then writes ids, in order.

    Like a real model, it answers for the sequence it has been shown: after the ids generated so far (counted
    from the end of the step's first forward pass) it predicts the script's next id, and EOS once that sequence
    has left the script (an id forced on it, e.g. the generator's probe for a parallel call)."""
    lm, tokenizer = tiny
    real_forward = lm.forward
    seen: list[int] = []  # the ids the KV cache holds, across steps
    # One prediction per forward pass, for the last position: prompt-lookup drafts (several positions checked in
    # one pass) are off here; tests/test_engines.py checks on the real model that drafts change no output.
    monkeypatch.setattr(CachedGenerator, "draft_tokens", 0)

    def script(ids: list[int]) -> list[int]:
        calls: list[int] = []
        base: list[int] = []

        def forward(*args, **kwargs):
            before = kwargs["cache"].get_seq_length()
            new = kwargs["input_ids"][0].tolist()
            out = real_forward(*args, **kwargs)
            calls.append(len(new))
            seen[:] = seen[:before] + new
            base[:] = base or [len(seen)]
            generated = seen[base[0] :]
            assert generated[: len(ids)] != ids, "decoded past the end of the script"
            on_script = generated == ids[: len(generated)]
            logits = torch.full_like(out.logits, -1e4)
            logits[..., ids[len(generated)] if on_script else tokenizer.eos_token_id] = 0.0
            out.logits = logits
            return out

        monkeypatch.setattr(lm, "forward", forward)
        return calls

    return script


def tokens_to_cover(tokenizer, ids: list[int], n_chars: int) -> int:
    """The fewest leading ids whose text reaches n_chars characters."""
    return next(k for k in range(len(ids) + 1) if len(tokenizer.decode(ids[:k])) >= n_chars)


def test_stops_when_the_tool_call_closes(tiny, scripted):
    lm, tokenizer = tiny
    call = TOOL_CALLS[4]
    ids = tokenizer(call + '\n\n@TOOL_RESPONSE\n{"sonuç": 1}\n', add_special_tokens=False)["input_ids"]
    calls = scripted(ids)
    generator = CachedGenerator(lm, tokenizer)
    pieces: list[str] = []
    result = generator.generate(PROMPT, max_new_tokens=200, on_text=pieces.append)
    assert (result.stop_reason, result.text) == ("tool_call", call)
    # Nothing decoded after the "}": one forward pass of "}" and the fixed "\n\n@TOOL_" decides that no
    # second @TOOL_CALL follows.
    needed = tokens_to_cover(tokenizer, ids, len(call))
    assert result.token_ids == ids[:needed] and result.call_probes == 1
    assert calls == [calls[0]] + [1] * (needed - 1) + [7]  # prefill, one forward per token, the probe
    assert "".join(pieces) == call
    prompt_ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    cached = generator.cached_ids
    assert cached[: len(prompt_ids)] == prompt_ids
    assert call.startswith(tokenizer.decode(cached[len(prompt_ids) :]))  # nothing past the cut
    assert generator._cache.get_seq_length() == len(cached)


@pytest.mark.parametrize("end", ["\n\n@TOOL_RESPONSE\n{}\n", "eos", "\n\n@PATIENT\nok"])
def test_parallel_calls_come_back_whole(tiny, scripted, end: str):
    lm, tokenizer = tiny
    ids = tokenizer(PARALLEL + ("\n\n" if end == "eos" else end), add_special_tokens=False)["input_ids"]
    if end == "eos":
        ids.append(tokenizer.eos_token_id)
    calls = scripted(ids)
    generator = CachedGenerator(lm, tokenizer)
    pieces: list[str] = []
    # The probe's tokens reach the grounding constraint once each (it tracks the text since the last call).
    constraint = GroundedNames(tokenizer, ["x } y"], arguments=("drug", "drugs"))
    result = generator.generate(PROMPT, max_new_tokens=200, on_text=pieces.append, constraint=constraint)
    assert (result.stop_reason, result.text) == ("tool_call", PARALLEL)
    assert "".join(pieces) == PARALLEL
    assert PARALLEL.encode() in bytes(constraint._generated)
    assert bytes(constraint._generated).count(b"@TOOL_") == 3  # two calls, then the rejected probe
    # A probe after each call: the first one reads the "C" of the second @TOOL_CALL and goes on.
    assert result.call_probes == 2 and calls.count(7) == 2
    assert result.token_ids == ids[: tokens_to_cover(tokenizer, ids, len(PARALLEL))]
    prompt_len = len(tokenizer(PROMPT, add_special_tokens=False)["input_ids"])
    assert PARALLEL.startswith(tokenizer.decode(generator.cached_ids[prompt_len:]))  # nothing past the cut


@pytest.mark.parametrize("extra", [0, 3, 6, 7])
def test_no_probe_past_the_token_budget(tiny, scripted, extra: int):
    """The probe runs only when its tokens and the choice after them fit the budget; else tokens are decoded one
    by one and the budget ends the turn at the call."""
    lm, tokenizer = tiny
    call = TOOL_CALLS[0]
    ids = tokenizer(call + "\n\n@TOOL_RESPONSE\n{}\n", add_special_tokens=False)["input_ids"]
    needed = tokens_to_cover(tokenizer, ids, len(call))
    scripted(ids)
    result = CachedGenerator(lm, tokenizer).generate(PROMPT, max_new_tokens=needed + extra)
    assert (result.stop_reason, result.text) == ("tool_call", call)
    assert result.call_probes == (extra == 7)
    assert result.decoded_tokens == (needed if extra == 7 else needed + extra)


def test_call_probe_needs_a_clean_token_split(smollm_tokenizer):
    prefix, call_id = call_probe(smollm_tokenizer)
    assert smollm_tokenizer.decode(prefix) == "\n\n@TOOL_" and smollm_tokenizer.decode([call_id]) == "C"

    class Merging:
        """A tokenizer that writes "}" and the newlines after it as one token: no "}" to probe after."""

        def __call__(self, text: str, add_special_tokens: bool = False) -> dict:
            return {"input_ids": [ord(c) for c in text.replace("}\n\n", "\x00")]}

        def decode(self, ids: list[int]) -> str:
            return "".join(chr(i) for i in ids).replace("\x00", "}\n\n")

    assert call_probe(Merging()) is None


def test_stops_at_a_foreign_block_and_never_streams_it(tiny, scripted):
    lm, tokenizer = tiny
    answer = "@PHARMACIST\nParol ağrı kesicidir; Привет, günde en fazla 4 tablet."
    ids = tokenizer(answer + "\n\n@PATIENT\nTeşekkürler\n", add_special_tokens=False)["input_ids"]
    calls = scripted(ids)
    generator = CachedGenerator(lm, tokenizer)
    pieces: list[str] = []
    result = generator.generate(PROMPT, max_new_tokens=200, on_text=pieces.append)
    assert (result.stop_reason, result.text) == ("foreign_block", answer)
    assert "".join(pieces) == answer and not any("@PA" in p or "\ufffd" in p for p in pieces)
    needed = tokens_to_cover(tokenizer, ids, len(answer + "\n\n@PA"))
    assert len(calls) == result.decoded_tokens == needed
    prompt_len = len(tokenizer(PROMPT, add_special_tokens=False)["input_ids"])
    assert answer.startswith(tokenizer.decode(generator.cached_ids[prompt_len:]))
    assert generator._cache.get_seq_length() == len(generator.cached_ids)

    # The next step (the patient's turn appended) reuses the cache up to where the tokenizations part:
    # SmolLM2 tokenizes a prompt-final "\n\n" as one token but "\n\n@" as "\n", "\n", "@".
    next_prompt = PROMPT + answer + "\n\n@PATIENT\nTeşekkürler\n\n"
    next_ids = tokenizer(next_prompt, add_special_tokens=False)["input_ids"]
    reusable = common_prefix_len(generator.cached_ids, next_ids)
    scripted([tokenizer.eos_token_id])
    follow = generator.generate(next_prompt, max_new_tokens=5)
    assert follow.cached_tokens == reusable >= prompt_len - 1


def test_stops_at_eos_and_at_max_new_tokens(tiny, scripted):
    lm, tokenizer = tiny
    text = "@PHARMACIST\nGeçmiş olsun.\n"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    calls = scripted([*ids, tokenizer.eos_token_id])
    pieces: list[str] = []
    result = CachedGenerator(lm, tokenizer).generate(PROMPT, max_new_tokens=100, on_text=pieces.append)
    assert (result.stop_reason, result.text, "".join(pieces)) == ("eos", text, text)
    assert result.token_ids == [*ids, tokenizer.eos_token_id] and len(calls) == len(ids) + 1

    calls = scripted(ids)
    result = CachedGenerator(lm, tokenizer).generate(PROMPT, max_new_tokens=3)
    assert (result.stop_reason, result.token_ids, len(calls)) == ("max_new_tokens", ids[:3], 3)


def test_an_interrupted_step_drops_the_cache(tiny):
    generator = CachedGenerator(*tiny)
    expected = generator.generate(PROMPT, max_new_tokens=8)

    def interrupt(text: str):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generator.generate(PROMPT + expected.text + "\n\n@PATIENT\nDevam\n\n", max_new_tokens=8, on_text=interrupt)
    assert generator.cached_ids == []
    again = generator.generate(PROMPT, max_new_tokens=8)
    assert (again.cached_tokens, again.token_ids) == (0, expected.token_ids)


def test_prompt_is_encoded_as_it_tokenizes_before_the_next_block(tiny):
    lm, tokenizer = tiny
    generator = CachedGenerator(lm, tokenizer)
    prompt = "@FORMAT PPSF/1.0\n\n@PATIENT\nParol?\n\n"
    plain = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    healed = generator.encode(prompt, "@")
    full = tokenizer(prompt + "@TOOL_CALL", add_special_tokens=False)["input_ids"]
    assert healed != plain  # "\n\n" alone is one token, before "@" it is two
    assert full[: len(healed)] == healed and tokenizer.decode(healed) == prompt
    assert generator.encode(prompt) == plain
    # When the next text merges into the prompt's last token there is no clean cut: plain encoding.
    merged = "Parol ağrı kesici"
    assert generator.encode(merged[:-1], merged[-1]) == tokenizer(merged[:-1], add_special_tokens=False)["input_ids"]


def test_a_prefix_model_reads_the_prefix_and_the_model_the_rest(tiny):
    """A base-prefix adapter (train_lora --base-prefix): the base model reads the cached prefix, the merged model
    every later token; the steps equal a hand-run pass of exactly that, and differ from the merged model alone."""
    from transformers import DynamicCache

    base, tokenizer = tiny
    merged = copy.deepcopy(base)
    with torch.no_grad():
        for p in merged.model.layers[-1].parameters():
            p.add_(torch.randn_like(p, generator=torch.Generator().manual_seed(1)) * 0.05)
    prefix = PROMPT[: PROMPT.index("@PATIENT")]
    generator = CachedGenerator(merged, tokenizer, prefix_model=base)
    assert generator.cache_prefix(prefix, "@") > 0
    ids = generator.encode(PROMPT)
    n = len(generator.encode(prefix, "@"))

    cache = DynamicCache(config=base.config)
    with torch.no_grad():
        base(input_ids=torch.tensor([ids[:n]]), cache=cache, use_cache=True)
        logits = merged(input_ids=torch.tensor([ids[n:]]), cache=cache, use_cache=True).logits[0, -1]
        expected = []
        for _ in range(12):
            expected.append(int(logits.argmax()))
            logits = merged(input_ids=torch.tensor([[expected[-1]]]), cache=cache, use_cache=True).logits[0, -1]
    first = generator.generate(PROMPT, max_new_tokens=12)
    assert first.token_ids[: len(expected)] == expected[: first.decoded_tokens]
    generator.reset()  # the next conversation starts from the base-read snapshot
    again = generator.generate(PROMPT, max_new_tokens=12)
    assert again.cached_tokens == n and again.token_ids == first.token_ids
    merged_only = CachedGenerator(merged, tokenizer).generate(PROMPT, max_new_tokens=12)
    assert merged_only.token_ids != first.token_ids


def test_a_call_the_prompt_started_stops_at_its_closing_brace():
    """A routed reply: the prompt holds the call up to its arguments; the text closes it and the stop is there."""
    prompt = '@PATIENT\nParol?\n\n@TOOL_CALL\n{\n  "name": "search_drug",\n  "arguments": {'
    detector = StopDetector(prompt)
    text = '"drug": "Pa}rol"}\n}\n\n@TOOL_RESPONSE\n'
    stop = detector.feed(text)
    assert stop is not None and stop.reason == "tool_call" and text[: stop.cut] == '"drug": "Pa}rol"}\n}'
