"""The agent's generation engine: KV-cache reuse across steps, token-exact stops on PPSF block boundaries."""

from __future__ import annotations

import copy
import functools
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import torch
from transformers import DynamicCache, LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

from ..ppsf import ASSISTANT_MARKERS as OWN_MARKERS
from ..ppsf import FOREIGN_MARKERS
from .grounding import GroundedNames
from .prefix_store import PrefixStore

TOOL_CALL = "@TOOL_CALL"
_MAX_MARKER_LINE = 64  # longer lines are kept only as far as needed to recognise a block header


@dataclass(frozen=True)
class Stop:
    """Why generation must stop, and where: the returned text is text[:cut]."""

    reason: str  # "tool_call" | "foreign_block" | "next_turn" | "answer_block"
    cut: int


# The order the template writes an assistant turn's blocks in; a block that goes back (or repeats, except
# @TOOL_CALL) can only start the next turn, which the model must not write for the patient.
_OWN_ORDER = {marker: rank for rank, marker in enumerate(OWN_MARKERS)}
_REPEATABLE = {TOOL_CALL}


def _marker_kind(line: str) -> str:
    """Classify a partial line: "foreign" / "own" / "none" once decided, "maybe" while still ambiguous."""
    candidates = [m for m in OWN_MARKERS + FOREIGN_MARKERS if m.startswith(line) or line.startswith(m)]
    if not candidates:
        return "none"
    if all(m in FOREIGN_MARKERS for m in candidates):
        return "foreign"
    if all(m in OWN_MARKERS for m in candidates):
        return "own"
    return "maybe"


class StopDetector:
    """Watches generated PPSF text (fed in pieces) for a closed tool-call JSON object or a foreign block.

    Text starts at a line start (the agent prompt ends with a blank line). A foreign block is a line
    starting with one of FOREIGN_MARKERS; it is recognised as soon as its prefix rules out the model's
    own markers ("@PA" is @PATIENT, "@P" could still be @PHARMACIST), and the cut drops it together with
    the newlines before it. An own block that the template could not write next in the same turn (a second
    @PHARMACIST, a @THOUGHT after the answer) starts the next turn and is cut the same way. After a
    "@TOOL_CALL" line, the first top-level JSON object is tracked (strings and backslash escapes included).
    Tool calls are the last blocks of a turn, and a turn may hold several (parallel calls): after a closed
    call only blank lines and another "@TOOL_CALL" line may follow, so the stop is decided at the first
    character that rules that out (or by finish(), at EOS), and the cut lands right after the last closing
    brace.
    """

    def __init__(self, prompt: str = "", stop_blocks: tuple[str, ...] = ()) -> None:
        """prompt: the text the generated text continues; a last line that opens an own block (the
        generation prompt's "@PHARMACIST") counts as that block, so a second one is the next turn.
        stop_blocks: own markers to stop at as soon as their line is recognised ("answer_block", cut before
        the line): the model has decided to answer, and someone else writes the answer."""
        self.stop_blocks = tuple(stop_blocks)
        self.text = ""
        self.stop: Stop | None = None
        self._line_start = 0  # index in text where the current line starts
        self._line = ""  # the current line's first _MAX_MARKER_LINE characters
        self._line_open = True  # the current line could still become a foreign marker
        self._last_own = _OWN_ORDER.get(prompt.rsplit("\n", 1)[-1].rstrip(), -1)  # rank of the last own header
        self._json_armed = False  # a @TOOL_CALL line ended; waiting for its "{"
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._call_end: int | None = None  # cut after the last closed tool call, while another may follow
        # A reply the prompt already started (a routed call written up to its arguments): the text continues its
        # open JSON object, so the stop is its closing brace, as if the model had written the start itself.
        tail = prompt.rsplit("\n\n", 1)[-1]
        if tail.startswith(TOOL_CALL + "\n"):
            self._json_armed = True
            for ch in tail[len(TOOL_CALL) + 1 :]:
                self._json_step(-1, ch)

    def feed(self, piece: str) -> Stop | None:
        """Append piece; return the Stop as soon as one is detected (then ignore further text)."""
        if self.stop is not None:
            return self.stop
        start = len(self.text)
        self.text += piece
        for i, ch in enumerate(piece, start):
            if self._call_end is not None and not self._another_call_may_follow(i):
                self.stop = Stop("tool_call", self._call_end)
            else:
                self.stop = self._json_step(i, ch) or self._line_step(i, ch)
            if self.stop is not None:
                return self.stop
        return None

    @property
    def awaits_next_call(self) -> bool:
        """The text ends exactly at a closed tool call's "}": the next line decides whether another call follows."""
        return self.stop is None and self._call_end == len(self.text)

    def finish(self) -> Stop | None:
        """Generation ended (EOS or the token budget): a closed tool call that awaited a next one is the stop."""
        if self.stop is None and self._call_end is not None:
            self.stop = Stop("tool_call", self._call_end)
        return self.stop

    def _another_call_may_follow(self, i: int) -> bool:
        """Whether text[_call_end:i+1] (after a closed call) is still blank lines and the start of a @TOOL_CALL line."""
        tail = self.text[self._call_end : i + 1]
        if not tail.strip():
            return True
        newline = tail.rfind("\n", 0, len(tail) - len(tail.lstrip()))
        if newline < 0:  # text on the line of the closing brace
            return False
        line = tail[newline + 1 :]
        if len(line) <= len(TOOL_CALL):
            return TOOL_CALL.startswith(line)
        return line.startswith(TOOL_CALL) and not line[len(TOOL_CALL) :].strip(" \t\n")

    @property
    def safe_len(self) -> int:
        """Length of the text prefix that no later stop can cut: what may be shown to the user."""
        if self.stop is not None:
            return self.stop.cut
        if self._call_end is not None:  # the turn may end here: what follows is shown once a call confirms it
            return self._call_end
        if self._line_open:  # a marker may be forming: hold back the line and the newlines before it
            return self._before_line()
        return len(self.text)

    def _before_line(self) -> int:
        end = self._line_start
        while end > 0 and self.text[end - 1] == "\n":
            end -= 1
        return end

    def _json_step(self, i: int, ch: str) -> Stop | None:
        if not (self._depth or self._json_armed):
            return None
        if self._in_string:
            if self._escape:
                self._escape = False
            elif ch == "\\":
                self._escape = True
            elif ch == '"':
                self._in_string = False
        elif ch == '"' and self._depth:
            self._in_string = True
        elif ch == "{":
            self._depth += 1
            self._json_armed = False
        elif ch == "}" and self._depth:
            self._depth -= 1
            if self._depth == 0:
                self._call_end = i + 1
        return None

    def _line_step(self, i: int, ch: str) -> Stop | None:
        if ch == "\n":
            if self._line.rstrip() == TOOL_CALL and not self._depth:
                self._json_armed, self._call_end = True, None
            self._line_start, self._line, self._line_open = i + 1, "", True
            return None
        if len(self._line) < _MAX_MARKER_LINE:
            self._line += ch
        if self._line_open:
            kind = _marker_kind(self._line)
            if kind == "foreign":
                return Stop("foreign_block", self._before_line())
            if kind == "own":
                (marker,) = [m for m in OWN_MARKERS if m.startswith(self._line) or self._line.startswith(m)]
                rank = _OWN_ORDER[marker]
                if marker in self.stop_blocks:
                    return Stop("answer_block", self._before_line())
                if rank < self._last_own or (rank == self._last_own and marker not in _REPEATABLE):
                    return Stop("next_turn", self._before_line())
                self._last_own = rank
            self._line_open = kind == "maybe"
        return None


class IncrementalDecoder:
    """Token ids -> new text pieces, holding back a character whose bytes are split across tokens.

    Each piece is the difference between decoding a short window with and without the newest ids (the
    prefix/read offsets of TGI and vLLM), so a step costs O(1) and SentencePiece-style leading spaces
    come out right; a window ending in U+FFFD is an incomplete UTF-8 sequence and waits for more ids.
    """

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self._prefix = 0  # ids[_prefix:_read] decode to text already returned: context for the next piece
        self._read = 0  # ids[:_read] are fully represented in the returned text

    @property
    def committed(self) -> int:
        """How many ids the returned text fully represents."""
        return self._read

    def add(self, token_id: int) -> str:
        """Add one id; return the new text it completes ("" while a character is still partial)."""
        self.ids.append(token_id)
        before = self._decode(self.ids[self._prefix : self._read])
        after = self._decode(self.ids[self._prefix :])
        if len(after) > len(before) and not after.endswith("\ufffd"):
            self._prefix, self._read = self._read, len(self.ids)
            return after[len(before) :]
        return ""

    def flush(self) -> str:
        """The text of held-back ids, partial characters included (at the end of generation)."""
        before = self._decode(self.ids[self._prefix : self._read])
        after = self._decode(self.ids[self._prefix :])
        self._prefix = self._read = len(self.ids)
        return after[len(before) :]

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


@dataclass
class GenerationResult:
    """One agent step's output and where its time went."""

    text: str  # generated text, cut at the stop (tool calls end exactly at the last one's closing "}")
    stop_reason: str  # "eos" | "max_new_tokens" | "tool_call" | "foreign_block" | "next_turn"
    token_ids: list[int]  # the step's tokens: sampled, the call probe's when a call followed, and a final EOS
    prompt_tokens: int  # tokens in this step's prompt
    cached_tokens: int  # prompt tokens reused from the KV cache
    prefill_tokens: int  # prompt tokens run through the model (prompt_tokens - cached_tokens)
    decoded_tokens: int  # len(token_ids)
    prefill_seconds: float  # prompt in -> first token chosen
    decode_seconds: float
    seconds: float  # whole call, tokenization included
    call_probes: int = 0  # forward passes of the fixed "\n\n@TOOL_" after a closed call (see CachedGenerator)
    drafted_tokens: int = 0  # tokens proposed by prompt lookup and checked by the model (see CachedGenerator)

    @property
    def tokens_per_second(self) -> float:
        """Decode speed, excluding the first token (which comes from the prefill)."""
        return (self.decoded_tokens - 1) / self.decode_seconds if self.decode_seconds > 0 else 0.0


class Generator(Protocol):
    """What the Agent generates with: CachedGenerator here, OpenAIGenerator on a server.

    generate() continues prompt until EOS, max_new_tokens, the end of the turn's tool calls or a foreign
    block, calling on_text with the text as it becomes final; accepts_constraint says whether it applies a
    token constraint (keyword `constraint`), which only a generator that decodes here can do;
    accepts_stop_blocks whether it takes `stop_blocks` (own markers to stop at: the agent writes that block)."""

    accepts_constraint: ClassVar[bool]
    accepts_stop_blocks: ClassVar[bool]
    context_length: int | None  # prompt + answer tokens the model attends to; None: unknown

    def reset(self) -> None: ...

    def generate(
        self,
        prompt: str,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        on_text: Callable[[str], None] | None = None,
        next_text: str | None = None,
    ) -> GenerationResult: ...


def encode_prompt(tokenizer: Any, prompt: str, next_text: str | None = None) -> list[int]:
    """Token ids of prompt; with next_text, as prompt tokenizes when next_text follows it.

    SmolLM2 encodes a trailing "\n\n" as one token but "\n\n@" as "\n", "\n", "@": a prompt cut at a
    block boundary would show the model a token it never sees there, and the next step's prompt
    (which holds the "@") could not reuse the cache up to that point.
    """
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    if not next_text:
        return ids
    joined = tokenizer(prompt + next_text, add_special_tokens=False)["input_ids"]
    tail = tokenizer(next_text, add_special_tokens=False)["input_ids"]
    head = joined[: len(joined) - len(tail)]
    if tail and joined[len(head) :] == tail and tokenizer.decode(head) == prompt:
        return head
    return ids  # next_text merges with the prompt's end: no clean boundary, keep the plain encoding


def common_prefix_len(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two id lists."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def call_probe(tokenizer) -> tuple[list[int], int] | None:
    """(ids of "\n\n@TOOL_" as they follow a "}", id that continues it to "@TOOL_CALL"), or None when the
    tokenizer has no such clean split (then the generator decodes those tokens one by one)."""

    def enc(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    call, other = enc("}\n\n" + TOOL_CALL + "\n"), enc("}\n\n@TOOL_RESPONSE\n")
    k = common_prefix_len(call, other)
    if k < 2 or k >= len(call) or enc("}") != call[:1]:
        return None
    decode = tokenizer.decode
    if decode(call[1:k]) != "\n\n@TOOL_" or not decode(call[: k + 1]).startswith("}\n\n@TOOL_C"):
        return None
    return call[1:k], call[k]


LOOKUP_NGRAM = 3  # tokens that must repeat before prompt lookup proposes what followed them


def lookup(ids: list[int], count: int, ngram: int = LOOKUP_NGRAM) -> list[int]:
    """Prompt-lookup draft: the `count` ids that followed the latest earlier occurrence of ids' last `ngram` ids.

    Answers restate tool results and the question, so what follows a repeated 3-gram is usually what comes
    next; the model checks the whole draft in one forward pass (transformers' prompt_lookup_num_tokens, written
    out here because the loop must stop on text, keep the cache exact and mask every position)."""
    if len(ids) <= ngram:
        return []
    tail = ids[-ngram:]
    last = tail[-1]
    for end in range(len(ids) - 2, ngram - 2, -1):  # end: index of a candidate's last id, latest first
        if ids[end] == last and ids[end - ngram + 1 : end + 1] == tail:
            return ids[end + 1 : end + 1 + count]
    return []


def eos_token_ids(model, tokenizer) -> set[int]:
    """The tokenizer's EOS id(s) and the model generation_config's."""
    ids: set[int] = set()
    generation_config = getattr(model, "generation_config", None)
    for value in (tokenizer.eos_token_id, getattr(generation_config, "eos_token_id", None)):
        if isinstance(value, int):
            ids.add(value)
        elif value is not None:
            ids.update(int(v) for v in value)
    return ids


class CachedGenerator:
    """Generates one agent step per call, reusing the KV cache of the previous steps' common prefix.

    The decode loop is written out rather than delegated to `model.generate` because each step must
    (1) prefill only the tokens after the cached prefix and know exactly which ids the cache holds,
    (2) check the text-level stops after every token and run no forward pass after a stop,
    (3) crop the cache back to the returned text, (4) sample from a private seeded
    torch.Generator instead of the global RNG, and (5) probe for a parallel call: when the text ends at a
    closed call's "}", PPSF has no end-of-turn token, so only the next line says whether another @TOOL_CALL
    follows. The only next lines the agent accepts are "\n\n@TOOL_CALL" and anything else (which ends the
    turn), so the fixed "\n\n@TOOL_" goes through the model in one forward pass and one token is chosen
    after it: the "C" of CALL continues the turn with those tokens, anything else ends it at the "}".
    Sampling uses transformers' own logits warpers.
    """

    accepts_constraint: ClassVar[bool] = True
    accepts_stop_blocks: ClassVar[bool] = True
    max_prefixes: ClassVar[int] = 4  # prefix snapshots kept (least recently used dropped first)
    draft_tokens: int = 6  # prompt-lookup draft length when greedy; 0: one token per forward pass
    lookup_ngram: int = LOOKUP_NGRAM  # ids that must repeat before a draft is proposed

    def __init__(self, model, tokenizer, prefix_model=None, *, prefix_store: PrefixStore | None = None) -> None:
        """prefix_model: the model that reads the prefix snapshots (cache_prefix) from position 0, model the rest;
        None: agent.engine.models.prefix_reader(model) (the base model of an adapter trained with a base-read
        prefix), else model itself. prefix_store: where prefix snapshots are also kept on disk, for the next
        process (agent.engine.prefix_store); None: in memory only."""
        from .models import prefix_reader

        self.model = model
        self.tokenizer = tokenizer
        self.prefix_model = prefix_model if prefix_model is not None else prefix_reader(model)
        self.prefix_store = prefix_store
        self.eos_token_ids = eos_token_ids(model, tokenizer)
        self._cache: Any = None
        self._cached_ids: list[int] = []  # the ids whose keys/values the cache holds, in order
        self._probe = call_probe(tokenizer)
        # Copies of the cache at fixed prompt prefixes (system prompt and tools), keyed by their exact ids:
        # every conversation that starts with one starts from its copy instead of prefilling it again.
        self._prefixes: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    @property
    def context_length(self) -> int | None:
        """The most tokens the model attends to (prompt and answer), from its config."""
        return getattr(getattr(self.model, "config", None), "max_position_embeddings", None)

    @property
    def device(self) -> torch.device:
        """Where logits live (the sampler's torch.Generator is made there)."""
        return self.model.device

    @property
    def cached_ids(self) -> list[int]:
        """The token ids currently held in the KV cache."""
        return list(self._cached_ids)

    def encode(self, prompt: str, next_text: str | None = None) -> list[int]:
        """Token ids of prompt as this generator prefills it (see encode_prompt)."""
        return encode_prompt(self.tokenizer, prompt, next_text)

    def reset(self) -> None:
        """Drop the conversation's KV cache (the prefix snapshots of cache_prefix stay)."""
        self._cache, self._cached_ids = None, []

    def clear(self) -> None:
        """Drop the KV cache and every prefix snapshot."""
        self.reset()
        self._prefixes.clear()

    @property
    def prefixes(self) -> list[int]:
        """The lengths in tokens of the prefix snapshots held, oldest first."""
        return [len(ids) for ids in self._prefixes]

    def cache_prefix(self, prefix: str, next_text: str | None = None) -> int:
        """Keep a copy of the cache at prefix from the next prefill that covers it: later prompts that start with
        the same ids start from the copy instead of prefilling them again.

        prefix: text every coming prompt starts with (the agent's format header, system prompt and tools);
        next_text as in generate(). Returns the prefix's length in tokens (0: too short to be worth a copy)."""
        ids = tuple(self.encode(prefix, next_text))
        if len(ids) < 2:
            return 0
        if ids in self._prefixes:
            self._prefixes.move_to_end(ids)
        else:
            # None: taken by the next _prefill whose prompt starts with ids (unless a stored one is there)
            self._prefixes[ids] = self._stored(ids)
            while len(self._prefixes) > self.max_prefixes:
                self._prefixes.popitem(last=False)
        return len(ids)

    # ---- prefix snapshots on disk (prefix_store) ----
    def _stored(self, ids: tuple[int, ...]) -> Any:
        """The stored snapshot of ids, made the cache (which checks it fits this model), or None."""
        if self.prefix_store is None or self.fingerprint is None:
            return None
        key = self.prefix_store.key(self.fingerprint, ids)
        data = self.prefix_store.load(key)
        if data is None:
            return None
        try:
            snapshot = self._load_snapshot(data, len(ids))
            self._restore(snapshot)
        except (ValueError, RuntimeError, KeyError, TypeError, IndexError):  # damaged, or of another build: remade
            self.prefix_store.drop(key)
            self._cache, self._cached_ids = None, []
            return None
        self._cached_ids = list(ids)
        return snapshot

    def _store(self, ids: tuple[int, ...], snapshot: Any) -> None:
        # Only a cache holding the prefix alone: a snapshot taken later holds more cells (llama.cpp copies all of
        # sequence 0), and what follows the prefix is the patient's conversation, which never goes to disk.
        if self.prefix_store is None or self.fingerprint is None or len(self._cached_ids) != len(ids):
            return
        try:
            data = self._dump_snapshot(snapshot)
        except (AttributeError, ValueError, RuntimeError):  # a cache this backend cannot write out: memory only
            return
        self.prefix_store.save(self.prefix_store.key(self.fingerprint, ids), data)

    @functools.cached_property
    def fingerprint(self) -> str | None:
        """What a stored prefix state depends on besides its ids: the weights (a strided sample of every tensor,
        enough to tell a merged adapter apart), dtype, device, attention and library versions; None where the
        cache cannot be stored (layers other than full attention)."""
        import transformers

        config = self.model.config.get_text_config(decoder=True)
        if getattr(config, "sliding_window", None) or any(
            t != "full_attention" for t in getattr(config, "layer_types", None) or ()
        ):
            return None
        h = hashlib.sha256()
        # The weights that wrote the snapshot: the prefix model's when there is one (its state is that model's own).
        for name, tensor in (self.prefix_model or self.model).state_dict().items():
            flat = tensor.detach().reshape(-1)
            sample = flat[:: max(1, flat.numel() // 1024)][:1024].float().cpu()
            h.update(f"{name}{tuple(tensor.shape)}{tensor.dtype}".encode())
            h.update(sample.numpy().tobytes())
        attention = getattr(config, "_attn_implementation", None)
        h.update(f"{self.model.device.type}|{attention}|{torch.__version__}|{transformers.__version__}".encode())
        h.update(self.model.config.to_json_string().encode())  # rope scaling and the like change the keys too
        return h.hexdigest()

    def _dump_snapshot(self, snapshot: Any) -> bytes:
        from safetensors.torch import save

        tensors = {}
        for i, layer in enumerate(snapshot.layers):
            tensors[f"{i}.keys"] = layer.keys.detach().contiguous().cpu()
            tensors[f"{i}.values"] = layer.values.detach().contiguous().cpu()
        return save(tensors)

    def _load_snapshot(self, data: bytes, length: int) -> Any:
        from safetensors import SafetensorError
        from safetensors.torch import load

        try:
            tensors = load(data)
        except SafetensorError as e:
            raise ValueError(f"a damaged prefix state: {e}") from None
        layers = self.model.config.get_text_config(decoder=True).num_hidden_layers
        pairs = [(tensors[f"{i}.keys"], tensors[f"{i}.values"]) for i in range(layers)]
        if len(tensors) != 2 * layers or any(
            t.shape[-2] != length or t.dtype != self.model.dtype for p in pairs for t in p
        ):
            raise ValueError("a stored prefix state of another shape")
        device = self.model.device
        return DynamicCache(ddp_cache_data=[(k.to(device), v.to(device)) for k, v in pairs], config=self.model.config)

    def generate(
        self,
        prompt: str,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        on_text: Callable[[str], None] | None = None,
        next_text: str | None = None,
        constraint: GroundedNames | None = None,
        stop_blocks: tuple[str, ...] = (),
    ) -> GenerationResult:
        """Continue prompt until EOS, max_new_tokens, the end of the turn's tool calls or a foreign block
        (or one of stop_blocks, StopDetector).

        temperature 0 is greedy; otherwise sample with temperature/top_p from a generator seeded with
        seed. on_text receives the text as it becomes final (never a marker being formed); the pieces
        concatenate to result.text. next_text is what the prompt is known to be followed by (PPSF agent
        mode: "@", every block starts with it): the prompt is then tokenized as it will be inside the
        finished conversation. constraint (agent.grounding.GroundedNames) masks the logits before each choice.
        """
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        choose = self._chooser(temperature, top_p, seed)
        drafting = self.draft_tokens if temperature == 0 else 0  # lookahead changes nothing only when greedy
        try:
            return self._generate(prompt, max_new_tokens, choose, on_text, next_text, constraint, drafting, stop_blocks)
        except BaseException:
            self.reset()  # an interrupted forward pass can leave the cache half-updated
            raise

    @torch.inference_mode()
    def _generate(
        self,
        prompt: str,
        max_new_tokens: int,
        choose: Callable[[torch.Tensor], int],
        on_text: Callable[[str], None] | None,
        next_text: str | None,
        constraint: GroundedNames | None = None,
        drafting: int = 0,
        stop_blocks: tuple[str, ...] = (),
    ) -> GenerationResult:
        t0 = time.perf_counter()
        ids = self.encode(prompt, next_text)
        if not ids:
            raise ValueError("The prompt is empty: there is nothing to continue")
        cached = self._reuse(ids)
        logits = self._prefill(ids, cached)
        decoder, detector = IncrementalDecoder(self.tokenizer), StopDetector(prompt, stop_blocks)
        boundaries = [(0, 0)]  # (ids committed, text length) after each piece: maps a cut back to ids
        generated: list[int] = []
        streamed, stop, reason, t_first, probes = 0, None, "max_new_tokens", 0.0, 0
        ahead: list[tuple[int, torch.Tensor]] = []  # draft tokens in the cache, each with the logits after it
        drafted = 0
        if constraint is not None:
            constraint.reset()

        def pick(logits: torch.Tensor) -> int:
            return choose(logits if constraint is None else constraint.mask(logits))

        def take(token: int, advance: bool = True) -> Stop | None:
            """Append a chosen (not EOS) token to the output; return the stop it completes, if any.
            advance=False: the constraint has already seen the token."""
            nonlocal streamed
            generated.append(token)
            if constraint is not None and advance:
                constraint.advance(token)
            piece = decoder.add(token)
            if not piece:
                return None
            found = detector.feed(piece)
            boundaries.append((decoder.committed, len(detector.text)))
            if on_text is not None and detector.safe_len > streamed:
                on_text(detector.text[streamed : detector.safe_len])
                streamed = detector.safe_len
            return found

        while True:
            token = pick(logits)
            t_first = t_first or time.perf_counter()
            if token in self.eos_token_ids:
                generated.append(token)
                reason = "eos"
                break
            if (stop := take(token)) is not None or len(generated) >= max_new_tokens:
                break
            if (
                self._probe is not None
                and detector.awaits_next_call
                and decoder.committed == len(decoder.ids)
                and len(generated) + len(self._probe[0]) < max_new_tokens
            ):
                prefix, call_id = self._probe
                self._crop(len(ids) + len(generated) - 1)  # drop a pending draft (the "}" may be one of it)
                ahead = []
                logits = self._forward([token, *prefix])  # the "}" token and the fixed "\n\n@TOOL_", one pass
                probes += 1
                if constraint is not None:
                    for i in prefix:
                        constraint.advance(i)
                token = pick(logits)
                if token != call_id:
                    break  # the turn ends at the "}"; finish() below makes the stop and the cache is cropped
                for i in prefix:
                    if (stop := take(i, advance=False)) is not None:
                        break
                stop = stop or take(token)
                if stop is not None or len(generated) >= max_new_tokens:
                    break
            if ahead and ahead[0][0] == token:  # a draft token the model chose: its logits are already computed
                logits = ahead.pop(0)[1]
                continue
            if ahead:  # the model chose otherwise: the rest of the draft leaves the cache
                self._crop(len(ids) + len(generated) - 1)
                ahead = []
            draft = lookup(ids + generated, drafting, self.lookup_ngram) if drafting else []
            if draft:
                rows = self._forward_rows([token, *draft])
                logits, ahead = rows[0], list(zip(draft, rows[1:], strict=True))
                drafted += len(draft)
            else:
                logits = self._forward([token])  # only now: no forward pass is ever wasted after a stop

        stop = stop or detector.finish()  # finish(): EOS, the budget or the probe ended the turn right after a call
        if stop is not None:
            reason = stop.reason
            text = detector.text[: stop.cut]
            # Keep in the cache only the generated ids that lie wholly inside the returned text.
            kept = max(n for n, length in boundaries if length <= stop.cut)
            self._crop(len(ids) + kept)
        else:
            text = detector.text + decoder.flush()
        if on_text is not None and len(text) > streamed:
            on_text(text[streamed:])
        t_end = time.perf_counter()
        return GenerationResult(
            text=text,
            stop_reason=reason,
            token_ids=list(generated),
            prompt_tokens=len(ids),
            cached_tokens=cached,
            prefill_tokens=len(ids) - cached,
            decoded_tokens=len(generated),
            prefill_seconds=t_first - t0,
            decode_seconds=t_end - t_first,
            seconds=t_end - t0,
            call_probes=probes,
            drafted_tokens=drafted,
        )

    def _prefill(self, ids: list[int], cached: int) -> torch.Tensor:
        """Run ids[cached:] through the model, stopping on the way to snapshot a pending prefix; last logits."""
        pending = [
            p for p, snap in self._prefixes.items() if snap is None and len(p) < len(ids) and tuple(ids[: len(p)]) == p
        ]
        if pending:
            prefix = max(pending, key=len)
            if self.prefix_model is not None:  # the prefix as its own model reads it, from position 0
                self._cache, self._cached_ids = self._new_cache(), []
                self._forward(list(prefix), self.prefix_model)
                cached = len(prefix)
            elif cached < len(prefix):
                self._forward(list(prefix[cached:]))
                cached = len(prefix)
            self._prefixes[prefix] = self._snapshot(len(prefix))
            self._store(prefix, self._prefixes[prefix])
        return self._forward(ids[cached:])

    def _reuse(self, ids: list[int]) -> int:
        """Crop the cache to its longest common prefix with ids (leaving >= 1 id to prefill), or start from a
        longer prefix snapshot; return how many ids the cache now holds."""
        keep = min(common_prefix_len(self._cached_ids, ids), len(ids) - 1) if self._cache is not None else 0
        snapshot = max(
            (
                p
                for p, snap in self._prefixes.items()
                if snap is not None and keep < len(p) < len(ids) and tuple(ids[: len(p)]) == p
            ),
            key=len,
            default=None,
        )
        if snapshot is not None:
            self._prefixes.move_to_end(snapshot)
            self._restore(self._prefixes[snapshot])
            self._cached_ids = list(snapshot)
            return len(snapshot)
        if keep == 0:
            self._cache, self._cached_ids = self._new_cache(), []
            return 0
        self._crop(keep)
        return len(self._cached_ids)

    # ---- the KV cache: a transformers DynamicCache here; llama.cpp's context in LlamaCppGenerator ----
    def _new_cache(self) -> Any:
        return DynamicCache(config=self.model.config)

    def _snapshot(self, length: int) -> Any:
        """A copy of the cache's first `length` ids."""
        snapshot = copy.deepcopy(self._cache)
        if len(self._cached_ids) > length:
            snapshot.crop(length - len(self._cached_ids))
        return snapshot

    def _restore(self, snapshot: Any) -> None:
        """Make a copy of snapshot the cache (the snapshot stays for the next conversation)."""
        self._cache = copy.deepcopy(snapshot)

    def _crop(self, length: int) -> None:
        """Cut the cache (and its id list) down to its first `length` ids."""
        drop = len(self._cached_ids) - length
        if drop <= 0:
            return
        try:
            self._cache.crop(-drop)  # transformers 5: a negative count of tokens to remove
            self._cached_ids = self._cached_ids[:length]
        except (RuntimeError, ValueError):
            # Sliding-window / recurrent layers may be unable to roll back: prefill the kept ids again (a
            # mid-generation crop, after a draft, must keep its context).
            kept = self._cached_ids[:length]
            self._cache, self._cached_ids = self._new_cache(), []
            if kept:
                self._forward(kept)

    def _forward(self, new_ids: list[int], model=None) -> torch.Tensor:
        """Run new_ids through the model (or another of the same shape) on top of the cache; return the last
        position's logits."""
        input_ids = torch.tensor([new_ids], device=self.model.device)
        # `cache=` is transformers 5's name for past_key_values; the DynamicCache grows in place.
        out = (model or self.model)(input_ids=input_ids, cache=self._cache, use_cache=True, logits_to_keep=1)
        self._cached_ids.extend(new_ids)
        return out.logits[0, -1]

    def _forward_rows(self, new_ids: list[int]) -> torch.Tensor:
        """Run new_ids through the model on top of the cache; return the logits after each of them."""
        input_ids = torch.tensor([new_ids], device=self.model.device)
        out = self.model(input_ids=input_ids, cache=self._cache, use_cache=True, logits_to_keep=len(new_ids))
        self._cached_ids.extend(new_ids)
        return out.logits[0]

    def _chooser(self, temperature: float, top_p: float, seed: int | None) -> Callable[[torch.Tensor], int]:
        """Greedy argmax, or seeded temperature/top-p sampling with transformers' warpers."""
        if temperature < 0 or not 0 < top_p <= 1:
            raise ValueError(f"Need temperature >= 0 and 0 < top_p <= 1, got {temperature} and {top_p}")
        if temperature == 0:
            return lambda logits: int(logits.argmax())
        warpers = LogitsProcessorList([TemperatureLogitsWarper(temperature)])
        if top_p < 1:
            warpers.append(TopPLogitsWarper(top_p))
        generator = torch.Generator(device=self.device)
        if seed is None:
            generator.seed()
        else:
            generator.manual_seed(seed)

        def sample(logits: torch.Tensor) -> int:
            scores = warpers(None, logits.float()[None])
            probs = torch.softmax(scores, dim=-1)
            return int(torch.multinomial(probs, 1, generator=generator))

        return sample
