"""PPSF tool calls for vLLM's OpenAI server: a ToolParser plugin, loaded by path (it imports nothing from agent).

    vllm serve OUT --enable-auto-tool-choice --tool-call-parser ppsf \\
        --tool-parser-plugin agent/ppsf/vllm_tool_parser.py

It parses with vLLM's own ResponseParser (vllm.parser.chat_parsing) and the `response_template` the model
folder's tokenizer_config.json ships, as vLLM's built-in `hf` parser does. That parser cannot take this template
in vLLM 0.32: its serving adapter accepts only fields named thinking, content and tool_calls and no `join`,
while PPSF's (written for transformers' parse_response) names its @THOUGHT field `reasoning_content` and joins
the pieces of an escaped line (`\\@...`). Here each text piece streams as it comes, which is the same text as
the join, and @THOUGHT text is content, as vLLM routes thinking when no reasoning parser is set.

A region closes at the next block or at the end of the reply; a stream's last call (the server stops on
"\\n@TOOL_RESPONSE", which it does not return) closes when the stream ends: ``finish_streaming``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.parser.chat_parsing import ResponseParser
from vllm.parser.chat_parsing.response_templates import load_response_template
from vllm.parser.response_template import resolve_response_template
from vllm.renderers.chat_utils import make_tool_call_id
from vllm.tool_parsers.abstract_tool_parser import ToolParser, ToolParserManager

TOOL_FIELD = "tool_calls"
TEXT_FIELDS = ("content", "reasoning_content")
PIECE = 256  # fed in bounded pieces: the parser searches from its last boundary to the end (agent.ppsf.parsing)


def _calls(value: Any) -> list[tuple[str, str]]:
    """(name, arguments as JSON) of each call in a closed tool region's value; [] if it is not a whole call."""
    out = []
    for item in value if isinstance(value, list) else [value]:
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name or not isinstance(arguments, dict):
            return []
        out.append((name, json.dumps(arguments, ensure_ascii=False)))
    return out


@ToolParserManager.register_module("ppsf")
class PPSFToolParser(ToolParser):
    """@TOOL_CALL blocks as OpenAI tool_calls; the @PHARMACIST (and @THOUGHT) text as content."""

    # The serving layer's JSON forcing for tool_choice "required" or a named tool writes bare JSON, not PPSF.
    supports_required_and_named = False
    engine_based_streaming = True  # so the serving layer calls finish_streaming() at the end of a stream

    def __init__(self, tokenizer: Any, tools: list | None = None) -> None:
        super().__init__(tokenizer, tools)
        template = resolve_response_template(tokenizer)
        if template is None:
            raise TypeError("the ppsf tool parser needs the model's tokenizer_config.json `response_template`")
        self.template = load_response_template(template)
        # Where a reply starts, as the template ends a prompt: after "@PHARMACIST" (plain chat, the default), or
        # after a blank line, where the model writes its own blocks (agent mode: add_generation_prompt false).
        self.prefixes = {
            mode: tokenizer.apply_chat_template(
                [{"role": "user", "content": "?"}], add_generation_prompt=mode, tokenize=False
            )
            for mode in (True, False)
        }
        self._stream: ResponseParser | None = None
        self._index = 0

    def _parser(self, request: Any) -> ResponseParser:
        prefix = self.prefixes[getattr(request, "add_generation_prompt", True) is not False]
        return ResponseParser(self.template, prefix=prefix, tools=[])

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        parser = self._parser(request)
        events = [e for i in range(0, len(model_output), PIECE) for e in parser.feed(model_output[i : i + PIECE])]
        events += parser.finalize()[1]
        text, calls = self._route(events)
        tool_calls = [ToolCall(function=FunctionCall(name=name, arguments=arguments)) for name, arguments in calls]
        return ExtractedToolCallInformation(tools_called=bool(tool_calls), tool_calls=tool_calls, content=text or None)

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> DeltaMessage | None:
        if self._stream is None:
            self._stream = self._parser(request)
        return self._delta(self._stream.feed(delta_text)) if delta_text else None

    def finish_streaming(self) -> DeltaMessage | None:
        if self._stream is None:
            return None
        stream, self._stream = self._stream, None
        return self._delta(stream.finalize()[1])

    def _route(self, events: list[dict]) -> tuple[str, list[tuple[str, str]]]:
        text, calls = [], []
        for event in events:
            field = event.get("field")
            if event["type"] == "region_chunk" and field in TEXT_FIELDS:
                text.append(event["text"])
            elif event["type"] == "region_close" and field == TOOL_FIELD:
                calls += _calls(event.get("value"))
        return "".join(text), calls

    def _delta(self, events: list[dict]) -> DeltaMessage | None:
        text, calls = self._route(events)
        deltas = []
        for name, arguments in calls:
            function = DeltaFunctionCall(name=name, arguments=arguments)
            deltas.append(DeltaToolCall(index=self._index, type="function", id=make_tool_call_id(), function=function))
            self._index += 1
        if not text and not deltas:
            return None
        return DeltaMessage(content=text or None, tool_calls=deltas)
