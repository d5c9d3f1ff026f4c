"""Parsing a reply with transformers' ResponseParser in time linear in its length."""

from __future__ import annotations

from typing import Any

from .templates import response_template

# transformers' ResponseParser searches from its last region boundary to the end of what it was fed, so a
# reply fed whole costs (boundaries x length); fed in bounded pieces, as a token stream is, it is linear.
PARSE_PIECE = 256


def feed(parser: Any, text: str) -> list[dict]:
    """Feed text to a transformers ResponseParser in pieces of at most PARSE_PIECE characters; its events."""
    events: list[dict] = []
    for i in range(0, len(text), PARSE_PIECE):
        events += parser.feed(text[i : i + PARSE_PIECE])
    return events


def parse_reply(tokenizer: Any, text: str, prefix: str, tools: list | None = None) -> dict:
    """`tokenizer.parse_response(text, prefix=prefix)` in time linear in len(text) (see PARSE_PIECE)."""
    parser = tokenizer.get_response_parser(response_template(), prefix=prefix, tools=tools)
    feed(parser, text)
    message, _ = parser.finalize()
    return message
