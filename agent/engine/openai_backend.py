"""Agent steps on any OpenAI-compatible server (vLLM, TGI, `transformers serve`, llama.cpp, ...).

The agent renders the PPSF prompt and parses the reply itself; the server only continues text, through the
**completions** endpoint (not chat: a chat endpoint would re-render the conversation with the server's own
template). The reply is streamed through the same StopDetector as the local engine, and the stream is
closed the moment it fires, so the server stops decoding after the turn's tool calls or at a foreign block.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import openai

from ..ppsf import STOP_STRINGS
from .calls import one_line
from .generation import GenerationResult, StopDetector, encode_prompt

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # `transformers serve` (and vLLM) listen on port 8000
_FINISH_REASONS = {"length": "max_new_tokens", "stop": "eos"}


class ServingError(RuntimeError):
    """The server could not be reached or refused a request; the message names the URL and the cause."""


def _detail(error: openai.APIStatusError) -> str:
    """The server's own words: OpenAI's {"error": {"message"}}, FastAPI's {"detail"}, else the raw body."""
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return _one_line(inner.get("message") or inner.get("detail") or inner)
        return _one_line(inner)
    if body:
        return _one_line(body)
    try:
        return _one_line(error.response.text) or _one_line(error.message)
    except Exception:  # a streamed response whose body was never read
        return _one_line(error.message)


def _one_line(value: object) -> str:
    """A server's text as one short line: an HTML error page loses its tags, a long body is cut."""
    return one_line(re.sub(r"<[^>]{0,200}>", " ", str(value)), limit=300)


class _TokenBudget:
    """How much of a streamed reply fits max_new_tokens, for a server that ignores max_tokens.

    A token is at least one UTF-8 byte, so the text is tokenized (with the tokenizer the prompt was counted
    with) only once its bytes could exceed the budget; a reply within max_tokens costs a few counts.
    """

    def __init__(self, tokenizer: Any, max_new_tokens: int) -> None:
        self.tokenizer = tokenizer
        self.limit = max_new_tokens
        self.text = ""
        self._bound = 0  # an upper bound of the tokens in self.text
        self.exhausted = False

    def admit(self, piece: str) -> str:
        """The part of piece within the budget (all of it, until the budget runs out)."""
        if self.exhausted:
            return ""
        self._bound += len(piece.encode("utf-8", "surrogatepass"))
        if self._bound <= self.limit:
            self.text += piece
            return piece
        ids = self.tokenizer(self.text + piece, add_special_tokens=False)["input_ids"]
        if len(ids) <= self.limit:
            self.text += piece
            self._bound = len(ids)
            return piece
        self.exhausted = True
        kept = self.tokenizer.decode(ids[: self.limit])
        end = len(kept) if (self.text + piece).startswith(kept) else len(self.text)
        admitted = (self.text + piece)[len(self.text) : max(end, len(self.text))]
        self.text += admitted
        return admitted


class OpenAIGenerator:
    """The Generator protocol (agent.engine.generation) over an OpenAI-compatible completions endpoint.

    >>> backend = build_backend(BackendOptions(backend="openai", base_url=URL))  # agent.engine.backends: this, checked
    >>> Agent(backend, [search_drug]).run("Parol ne işe yarar?")

    tokenizer counts tokens when the server sends no usage (a stream closed early never gets it). The
    server keeps its own KV cache (vLLM's prefix caching reuses it across steps); cached_tokens is what
    its usage reports, else 0. token_prompt sends the prompt as token ids, encoded as the local engine
    encodes it (next_text included), for servers that accept them (vLLM, OpenAI; `transformers serve`
    takes text only): a text prompt ending in a blank line is then not tokenized with "\n\n" merged into
    one token that never precedes "@" in a finished conversation.
    """

    accepts_constraint: ClassVar[bool] = False  # the server samples: no token constraint reaches it
    accepts_stop_blocks: ClassVar[bool] = True

    def __init__(
        self,
        model: str | None,
        tokenizer: Any,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 1,
        context_length: int | None = None,
        extra_body: dict | None = None,
        token_prompt: bool = False,
        stop: Sequence[str] | None = STOP_STRINGS,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.base_url = base_url
        self.tokenizer = tokenizer
        self.timeout = timeout
        # The served model's context; by default the tokenizer's model_max_length (transformers' "unlimited"
        # sentinel, ~1e30, reads as unknown). The agent refuses a conversation that does not fit.
        limit = context_length or getattr(tokenizer, "model_max_length", None)
        self.context_length = limit if isinstance(limit, int) and 0 < limit < 10**9 else None
        self.token_prompt = token_prompt
        # The server stops at a block only the prompt writes (the format has no end-of-turn token); the text
        # before it is what the detector would keep. None: send no stop (OpenAI itself takes at most 4).
        self.stop = list(stop) if stop else None
        self.extra_body = dict(extra_body or {})  # server-specific request fields (top_k, generation_config...)
        # Local servers need no key, but the client insists on one.
        key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.client = client or openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)
        self.model = model if model is not None else self._only_model()

    # ---- server checks ----
    def served_models(self) -> list[str]:
        """The model ids the server lists at /models."""
        return [m.id for m in self._request(lambda: list(self.client.models.list()))]

    def check(self) -> None:
        """Fail early, with the URL, if the server is unreachable or does not list self.model."""
        try:
            served = self.served_models()
        except ServingError as e:
            if isinstance(e.__cause__, openai.NotFoundError):  # no /models here: the first request will tell
                return
            raise
        if served and self.model not in served:
            raise ServingError(f"{self.base_url} does not serve model {self.model!r}; it serves: {', '.join(served)}")

    def _only_model(self) -> str:
        served = self.served_models()
        if len(served) != 1:
            listed = ", ".join(served) or "none"
            raise ServingError(f"{self.base_url} serves {len(served)} models ({listed}): name one with --model")
        return served[0]

    def _request(self, call: Callable[[], Any]) -> Any:
        """Run one client call, turning the client's errors into ServingError messages that name the URL."""
        try:
            return call()
        except openai.APIConnectionError as e:  # includes timeouts
            raise ServingError(
                f"Cannot reach an OpenAI-compatible server at {self.base_url}: {e.__cause__ or e}. Start one "
                f"(e.g. `transformers serve MODEL --port 8000`) or pass the right --base-url."
            ) from e
        except openai.NotFoundError as e:
            model = getattr(self, "model", None)  # unset while the model is being looked up
            raise ServingError(f"{self.base_url}: not found (HTTP 404) for model {model!r}: {_detail(e)}") from e
        except openai.APIStatusError as e:
            raise ServingError(f"{self.base_url} answered HTTP {e.status_code}: {_detail(e)}") from e
        except openai.APIError as e:  # an error event inside a stream
            raise ServingError(f"{self.base_url} reported an error: {_one_line(e.message)}") from e
        except ValueError as e:  # an event whose data is not JSON
            raise ServingError(f"{self.base_url} sent a malformed stream event: {_one_line(e)}") from e
        except Exception as e:
            # The connection broke while a stream was read: the transport's own error (httpx in openai 1.x,
            # httpx2 in later releases) reaches us unwrapped.
            if type(e).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore"):
                raise ServingError(f"Lost the connection to {self.base_url}: {type(e).__name__}: {e}") from e
            raise

    # ---- the CachedGenerator interface ----
    def reset(self) -> None:
        """Nothing to drop: the server owns its KV cache."""

    def generate(
        self,
        prompt: str,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        on_text: Callable[[str], None] | None = None,
        next_text: str | None = None,
        stop_blocks: tuple[str, ...] = (),
    ) -> GenerationResult:
        """Continue prompt until EOS, max_new_tokens, a closed tool call or a foreign block, or one of
        stop_blocks (as CachedGenerator).

        on_text receives the text as it becomes final; the pieces concatenate to result.text. next_text is
        used with token_prompt; otherwise the server tokenizes the prompt text itself.
        """
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if not prompt:
            raise ValueError("The prompt is empty: there is nothing to continue")
        # The same ids the local engine would prefill.
        prompt_ids = encode_prompt(self.tokenizer, prompt, next_text) if self.token_prompt else None
        params: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt_ids if prompt_ids is not None else prompt,
            "max_tokens": max_new_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if seed is not None:
            params["seed"] = seed
        if self.stop:
            params["stop"] = self.stop
        if self.extra_body:
            params["extra_body"] = self.extra_body
        t0 = time.perf_counter()
        stream = self._request(lambda: self.client.completions.create(**params))
        detector, streamed = StopDetector(prompt, stop_blocks), 0
        budget = _TokenBudget(self.tokenizer, max_new_tokens)
        finish, usage, t_first, events = None, None, 0.0, 0

        def read() -> None:
            nonlocal finish, usage, t_first, streamed, events
            for chunk in stream:
                events += 1
                if time.perf_counter() - t0 > self.timeout:
                    raise ServingError(f"{self.base_url} did not finish a step within {self.timeout:g} s (--timeout)")
                usage = getattr(chunk, "usage", None) or usage  # OpenAI sends it in a last chunk without choices
                choices = getattr(chunk, "choices", None) or []
                if not isinstance(choices, list) or not all(hasattr(c, "text") for c in choices):
                    raise ServingError(f"{self.base_url} sent a malformed completion chunk: {_one_line(chunk)}")
                for choice in choices:
                    finish = getattr(choice, "finish_reason", None) or finish
                    text = choice.text
                    if text is None or text == "":
                        continue
                    if not isinstance(text, str):
                        raise ServingError(f"{self.base_url} sent a completion text that is not a string: {text!r:.80}")
                    t_first = t_first or time.perf_counter()
                    detector.feed(budget.admit(text))
                    if on_text is not None and detector.safe_len > streamed:
                        on_text(detector.text[streamed : detector.safe_len])
                        streamed = detector.safe_len
                    if detector.stop is not None or budget.exhausted:
                        return  # closing the stream below makes the server cancel the generation

        try:
            self._request(read)
        finally:
            stream.close()
        if events == 0:
            kind = _header(stream, "content-type")
            raise ServingError(
                f"{self.base_url} answered without any completion event (content-type {kind or 'not given'}): "
                "is it an OpenAI-compatible server?"
            )
        stop = detector.finish()  # a stream that ended right after a closed tool call stops there
        text = detector.text[: stop.cut] if stop is not None else detector.text
        if on_text is not None and len(text) > streamed:
            on_text(text[streamed:])
        t_end = time.perf_counter()
        # Servers send no token ids: these are the local tokenizer's ids of the text received.
        received_ids = self._encode(detector.text)
        prompt_count, completion_count = (
            getattr(usage, "prompt_tokens", None),
            getattr(usage, "completion_tokens", None),
        )
        if _counts(prompt_count, completion_count):
            prompt_tokens, decoded = prompt_count, min(completion_count, max_new_tokens)
            details = getattr(usage, "prompt_tokens_details", None)
            cached = getattr(details, "cached_tokens", None)
            cached = min(cached, prompt_tokens) if _counts(cached) else 0
        else:  # no usage, or one with counts that are not counts: count here
            prompt_tokens = len(prompt_ids) if prompt_ids is not None else len(self._encode(prompt))
            decoded, cached = len(received_ids), 0
        t_first = t_first or t_end
        reason = _FINISH_REASONS.get(finish or "stop", "eos") if isinstance(finish, str) else "eos"
        if stop is not None or budget.exhausted:
            reason = stop.reason if stop is not None else "max_new_tokens"
        return GenerationResult(
            text=text,
            stop_reason=reason,
            token_ids=received_ids,
            prompt_tokens=prompt_tokens,
            cached_tokens=cached,
            prefill_tokens=prompt_tokens - cached,
            decoded_tokens=decoded,
            prefill_seconds=t_first - t0,
            decode_seconds=t_end - t_first,
            seconds=t_end - t0,
        )

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"] if text else []


def _counts(*values: object) -> bool:
    """Whether values are token counts (a broken server may send strings, floats or negatives)."""
    return all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)


def _header(stream: Any, name: str) -> str | None:
    try:
        return stream.response.headers.get(name)
    except AttributeError:
        return None
