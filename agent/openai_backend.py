"""Agent steps on any OpenAI-compatible server (vLLM, TGI, `transformers serve`, llama.cpp, ...).

The agent renders the PPSF prompt and parses the reply itself; the server only continues text, through the
**completions** endpoint (not chat: a chat endpoint would re-render the conversation with the server's own
template). The reply is streamed through the same StopDetector as the local engine, and the stream is
closed the moment it fires, so the server stops decoding after the turn's tool calls or at a foreign block.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import openai

from .generation import CachedGenerator, GenerationResult, StopDetector

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
            return str(inner.get("message") or inner.get("detail") or inner)
        return str(inner)
    if body:
        return str(body)
    try:
        return error.response.text.strip() or error.message
    except Exception:  # a streamed response whose body was never read
        return error.message


class OpenAIGenerator:
    """CachedGenerator's interface (generate / reset) over an OpenAI-compatible completions endpoint.

    >>> generator = OpenAIGenerator("HuggingFaceTB/SmolLM2-135M-Instruct", load_tokenizer(), base_url=URL)
    >>> Agent(None, load_tokenizer(), generator=generator).run("Parol ne işe yarar?")

    tokenizer counts tokens when the server sends no usage (a stream closed early never gets it). The
    server keeps its own KV cache (vLLM's prefix caching reuses it across steps); cached_tokens is what
    its usage reports, else 0. token_prompt sends the prompt as token ids, encoded as the local engine
    encodes it (next_text included), for servers that accept them (vLLM, OpenAI; `transformers serve`
    takes text only): a text prompt ending in a blank line is then not tokenized with "\n\n" merged into
    one token that never precedes "@" in a finished conversation.
    """

    def __init__(
        self,
        model: str | None,
        tokenizer: Any,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        timeout: float = 600.0,
        max_retries: int = 2,
        extra_body: dict | None = None,
        token_prompt: bool = False,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.base_url = base_url
        self.tokenizer = tokenizer
        self.token_prompt = token_prompt
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
            raise ServingError(f"{self.base_url} reported an error: {e.message}") from e
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
    ) -> GenerationResult:
        """Continue prompt until EOS, max_new_tokens, a closed tool call or a foreign block (as CachedGenerator).

        on_text receives the text as it becomes final; the pieces concatenate to result.text. next_text is
        used with token_prompt; otherwise the server tokenizes the prompt text itself.
        """
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if not prompt:
            raise ValueError("The prompt is empty: there is nothing to continue")
        # CachedGenerator.encode only reads self.tokenizer: the same ids the local engine would prefill.
        prompt_ids = CachedGenerator.encode(self, prompt, next_text) if self.token_prompt else None  # type: ignore[arg-type]
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
        if self.extra_body:
            params["extra_body"] = self.extra_body
        t0 = time.perf_counter()
        stream = self._request(lambda: self.client.completions.create(**params))
        detector, streamed = StopDetector(prompt), 0
        finish, usage, t_first = None, None, 0.0

        def read() -> None:
            nonlocal finish, usage, t_first, streamed
            for chunk in stream:
                usage = chunk.usage or usage  # OpenAI sends it in a last chunk without choices
                for choice in chunk.choices or []:
                    finish = choice.finish_reason or finish
                    if not choice.text:
                        continue
                    t_first = t_first or time.perf_counter()
                    detector.feed(choice.text)
                    if on_text is not None and detector.safe_len > streamed:
                        on_text(detector.text[streamed : detector.safe_len])
                        streamed = detector.safe_len
                    if detector.stop is not None:
                        return  # closing the stream below makes the server cancel the generation

        try:
            self._request(read)
        finally:
            stream.close()
        stop = detector.finish()  # a stream that ended right after a closed tool call stops there
        text = detector.text[: stop.cut] if stop is not None else detector.text
        if on_text is not None and len(text) > streamed:
            on_text(text[streamed:])
        t_end = time.perf_counter()
        # Servers send no token ids: these are the local tokenizer's ids of the text received.
        received_ids = self._encode(detector.text)
        if usage is not None:
            prompt_tokens, decoded = usage.prompt_tokens, usage.completion_tokens
            details = getattr(usage, "prompt_tokens_details", None)
            cached = min(getattr(details, "cached_tokens", None) or 0, prompt_tokens)
        else:
            prompt_tokens = len(prompt_ids) if prompt_ids is not None else len(self._encode(prompt))
            decoded, cached = len(received_ids), 0
        t_first = t_first or t_end
        return GenerationResult(
            text=text,
            stop_reason=stop.reason if stop is not None else _FINISH_REASONS.get(finish or "stop", "eos"),
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
