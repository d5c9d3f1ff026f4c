"""Grounded names: a tool call may only name what the conversation has written.

While the model writes the value of a grounded argument (a string argument such as the pharmacy tools'
`"drug"`, or an element of a list argument such as `"drugs"`; the caller names them) inside a @TOOL_CALL,
only tokens that keep the value a substring of the conversation's text (the patient's messages, references,
tool results, earlier answers; as written or in title case) starting at a word start are allowed, and the
closing quote only after a value that ends at a word end, and (given `known_name`) not inside a longer
known name the text goes on to ("İzosorbid" of "İzosorbid mononitrat"). A small model that misspells a name it
copies ("Lasartan" for "Losartan") or invents one ("Macedonia" for "Majezik") then looks up what the patient
actually wrote, and the tools' own fuzzy matching does the rest. Other arguments (numbers, conditions,
sections) are left alone. Which tool, and which words of the message, stay the model's choice.

Why not a library: JSON-schema/regex constrained decoders (outlines, lm-format-enforcer) constrain a value
to a pattern fixed in advance; "any substring of this conversation" changes every turn and would compile
to a new automaton per step. The check here is a dictionary walk over the continuations of the value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

import torch


def _value_patterns(scalar: str, listed: str) -> tuple[tuple[re.Pattern, ...], tuple[re.Pattern, ...]]:
    """(open, closed) patterns for a string argument and an element of a list argument, by name.

    Open: the value being written, after the last @TOOL_CALL, inside "scalar": "… or "listed": ["…", "…
    Closed: right after a value's closing quote, where the JSON must go on as _AFTER_CLOSE says (a small model
    that was made to stop a name early can lose count of its brackets)."""
    a, b = re.escape(scalar.encode()), re.escape(listed.encode())
    opened = (
        re.compile(rb'"' + a + rb'"\s*:\s*"([^"\\]*)\Z'),
        re.compile(rb'"' + b + rb'"\s*:\s*\[\s*(?:"[^"\\]*"\s*,\s*)*"([^"\\]*)\Z'),
    )
    closed = (
        re.compile(rb'"' + a + rb'"\s*:\s*"[^"\\]*"\s*\Z'),
        re.compile(rb'"' + b + rb'"\s*:\s*\[\s*(?:"[^"\\]*"\s*,\s*)*"[^"\\]*"\s*\Z'),
    )
    return opened, closed


_TOOL_CALL = b"@TOOL_CALL"
# What may follow a name's closing quote inside the same token, for a string and for a list argument: the JSON that
# closes the arguments, or a comma (and, in a list, the next name's quote)
_AFTER_CLOSE = (
    re.compile(rb"\s*(?:,|\}{1,2})?\s*"),
    re.compile(rb'\s*(?:,\s*"?|\](?:\s*\}){0,2})?\s*'),
)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table, which byte-level BPE vocabularies are written in."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))


_BYTE_OF = {c: b for b, c in _bytes_to_unicode().items()}
_SPM_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def token_bytes(tokenizer) -> list[bytes | None]:
    """Each token id's bytes (None for special tokens and tokens whose bytes cannot be known)."""
    special = set(tokenizer.all_special_ids)
    size = len(tokenizer)
    out: list[bytes | None] = [None] * size
    for token_id, token in enumerate(tokenizer.convert_ids_to_tokens(list(range(size)))):
        if token is None or token_id in special:
            continue
        if all(ch in _BYTE_OF for ch in token):  # byte-level BPE (GPT-2, SmolLM2, Qwen, Llama 3)
            out[token_id] = bytes(_BYTE_OF[ch] for ch in token)
        elif m := _SPM_BYTE.fullmatch(token):  # SentencePiece byte fallback
            out[token_id] = bytes([int(m.group(1), 16)])
        else:  # SentencePiece pieces ("▁" is a space)
            out[token_id] = token.replace("\u2581", " ").encode("utf-8")
    return out


class _Vocab:
    """Token ids by their bytes, and tokens that close a name ('…"…') by the bytes before the quote
    (closing[0] for a string argument, closing[1] for a list element)."""

    def __init__(self, tokenizer) -> None:
        self.by_bytes: dict[bytes, list[int]] = {}
        self.closing: tuple[dict[bytes, list[int]], ...] = ({}, {})
        self.bytes_of = token_bytes(tokenizer)
        for token_id, data in enumerate(self.bytes_of):
            if not data or b"\\" in data:
                continue
            quote = data.find(b'"')
            if quote < 0:
                self.by_bytes.setdefault(data, []).append(token_id)
            else:
                for closing, after in zip(self.closing, _AFTER_CLOSE, strict=True):
                    if after.fullmatch(data[quote + 1 :]):
                        closing.setdefault(data[:quote], []).append(token_id)
        # tokens that may follow a closed name (string argument, list element): punctuation only, no empty token
        self.after_close = tuple(
            [i for i, data in enumerate(self.bytes_of) if data and data.strip() and after.fullmatch(data)]
            for after in _AFTER_CLOSE
        )
        self.longest = max((len(b) for b in self.by_bytes), default=0)
        # every proper prefix of a token's bytes (or of a closing token's name part): a walk stops outside it
        self.prefixes = {
            key[:i] for key in (*self.by_bytes, *self.closing[0], *self.closing[1]) for i in range(len(key))
        }


@lru_cache(maxsize=4)
def _vocab(tokenizer) -> _Vocab:
    return _Vocab(tokenizer)


def _fold(data: bytes) -> str:
    return data.decode("utf-8", "ignore").casefold()


def _case_variants(text: str) -> list[str]:
    return [text, text.title()]


def _is_word_byte(b: int) -> bool:
    return b >= 0x80 or chr(b).isalnum()


# A multi-word name's words are joined by spaces or hyphens only; a name is looked up to this many more words.
_NAME_JOINER = re.compile(rb"[ -]+")
_MORE_NAME_WORDS = 3


class GroundedNames:
    """Token constraint for CachedGenerator: the grounded arguments' values must come from `sources`.

    known_name, when given, says whether a text is a known name (the pharmacy's drug data, say): a value may
    then not close where this place of the text goes on, by up to three more words joined by spaces or
    hyphens, to a longer known name. The rule is per place: a value the text also has on its own elsewhere
    ("Loperamid" in an earlier tool result) may still close there.

    names_only (with known_name): when the conversation holds a known name, a value must be the longest known
    name at its place ("Coumadin", not "İstanbul", "eczane" or "ateş" next to it); with none, any span as above,
    so a medicine nobody knows still reaches the tools (and their "not in the database"). A list element
    never repeats an earlier one.
    """

    def __init__(
        self,
        tokenizer,
        sources: Iterable[str],
        known_name: Callable[[str], bool] | None = None,
        *,
        arguments: tuple[str, str],
        names_only: bool = False,
        written: str = "",
    ) -> None:
        """arguments: the names of the grounded string argument and of the grounded list argument; written: the
        text the reply starts with before generation (agent.engine.routing), as if generated."""
        self.vocab = _vocab(tokenizer)
        self._open, self._closed = _value_patterns(*arguments)
        texts = [v for s in sources if s and s.strip() for v in _case_variants(s)]
        # "\n" separates the texts so that no value runs from one into the next.
        self.haystack = "\n".join(texts).encode("utf-8")
        # A small model tends to stop a name at its first word ("Loperamid" for "loperamid hidroklorür"), and
        # the call then carries less than the patient wrote. Checked lazily, only where a value could close.
        self.known_name = known_name
        self._cut_short: dict[tuple[int, int], bool] = {}
        self._written = written.encode("utf-8")
        self._generated = bytearray(self._written)
        self._names_only = names_only and known_name is not None
        self._longest: dict[int, int] | None = None  # start -> end of the longest known name there (lazy)

    def _next_word_ends(self, start: int, stop: int, words: int) -> Iterator[int]:
        """The ends of up to `words` more words after haystack[start:stop], each joined by a name joiner."""
        hay = self.haystack
        for _ in range(words):
            joiner = _NAME_JOINER.match(hay, stop)
            if joiner is None or joiner.end() == len(hay) or not _is_word_byte(hay[joiner.end()]):
                return
            stop = self._word_end(joiner.end())
            yield stop

    def _word_end(self, i: int) -> int:
        while i < len(self.haystack) and _is_word_byte(self.haystack[i]):
            i += 1
        return i

    def _is_known(self, start: int, stop: int) -> bool:
        return self.known_name(self.haystack[start:stop].decode("utf-8", "ignore"))  # type: ignore[misc]

    @property
    def _spans(self) -> dict[int, int]:
        """start -> end of the longest known name from each word start of the haystack (up to 1 + _MORE_NAME_WORDS
        words); empty when names_only is off or the conversation holds none. Built on first use: most steps never
        write a grounded value, and the agent builds a GroundedNames for every step."""
        if self._longest is None:
            self._longest = {}
            for m in re.finditer(rb"(?<![\w\x80-\xff])[\w\x80-\xff]", self.haystack) if self._names_only else ():
                start = m.start()
                first = self._word_end(start)
                for stop in (first, *self._next_word_ends(start, first, _MORE_NAME_WORDS)):
                    if self._is_known(start, stop):
                        self._longest[start] = stop
        return self._longest

    def reset(self) -> None:
        """Start a new generation step (from the text it was given as written)."""
        self._generated = bytearray(self._written)

    def advance(self, token_id: int) -> None:
        """Record a generated token."""
        data = self.vocab.bytes_of[token_id] if token_id < len(self.vocab.bytes_of) else None
        self._generated += data or b""

    def _call_tail(self) -> bytes | None:
        """The text generated since the last @TOOL_CALL marker, or None before one."""
        start = self._generated.rfind(_TOOL_CALL)
        return None if start < 0 else bytes(self._generated[start:])

    def open_value(self) -> tuple[bytes, int] | None:
        """The bytes of the value being written and 0 (string argument) or 1 (list element), or None outside one."""
        tail = self._call_tail()
        for kind, pattern in enumerate(self._open if tail else ()):
            if m := pattern.search(tail):
                return m.group(1), kind
        return None

    def closed_value(self) -> int | None:
        """0 (string argument) or 1 (list element) right after a value's closing quote (and spaces), else None."""
        tail = self._call_tail()
        for kind, pattern in enumerate(self._closed if tail else ()):
            if pattern.search(tail):
                return kind
        return None

    def allowed(self) -> list[int] | None:
        """Token ids allowed next, or None when unconstrained (outside a name, or no grounded way on)."""
        found = self.open_value()
        if found is None:
            closed = self.closed_value()
            return None if closed is None else (self.vocab.after_close[closed] or None)
        if not self.haystack:
            return None
        value, kind = found
        closing = self.vocab.closing[kind]
        ids: set[int] = set()
        starts = self._occurrences(value)
        spans = self._spans  # built once per conversation, read for every candidate below
        if spans:  # only the known names the conversation holds, each once in a list
            listed = self._listed() if kind == 1 else set()
            starts = [
                s
                for s in starts
                if s in spans and s + len(value) <= spans[s] and _fold(self.haystack[s : spans[s]]) not in listed
            ]
        for start in starts:
            stop = spans[start] if spans else len(self.haystack)
            rest = self.haystack[start + len(value) : min(stop, start + len(value) + self.vocab.longest)]
            for depth in range(len(rest) + 1):
                head = rest[:depth]
                if depth and (head[-1:] == b"\n" or head[:-1] not in self.vocab.prefixes):
                    break
                # a name ends where a word ends ("Losa" is not a name in "Losartan")
                end = start + len(value) + depth
                at_word_end = end == len(self.haystack) or not _is_word_byte(self.haystack[end])
                name = value + head
                # names only: the longest known name from this place (never one cut short inside it)
                known = end == spans[start] if spans else not self._inside_longer_name(start, end)
                if name and _is_word_byte(name[-1]) and at_word_end and known:
                    ids.update(closing.get(head, ()))
                if depth:
                    ids.update(self.vocab.by_bytes.get(head, ()))
        return sorted(ids) or None  # never a dead end: with nothing grounded, the model goes on unconstrained

    def _listed(self) -> set[str]:
        """The elements already written in the list being written (case-folded): ["Thyroxine", "Thyroxine"]
        checks nothing, so a name is not offered twice."""
        tail = self._call_tail() or b""
        return {_fold(e) for e in re.findall(rb'"([^"\\]*)"', tail[tail.rfind(b"[") + 1 :])}

    def _inside_longer_name(self, start: int, end: int) -> bool:
        """Whether haystack[start:end] is the start of a longer known name that the haystack goes on to."""
        if self.known_name is None:
            return False
        if (start, end) not in self._cut_short:
            ends = self._next_word_ends(start, end, _MORE_NAME_WORDS)
            self._cut_short[(start, end)] = any(self._is_known(start, stop) for stop in ends)
        return self._cut_short[(start, end)]

    def _occurrences(self, value: bytes) -> list[int]:
        """Where value occurs in the haystack at a word start (a name starts at a word start)."""
        hay, found = self.haystack, []
        i = hay.find(value)
        while 0 <= i < len(hay):
            if _is_word_byte(hay[i]) and (i == 0 or not _is_word_byte(hay[i - 1])):
                found.append(i)
            i = hay.find(value, i + 1)
        return found

    def mask(self, logits: torch.Tensor) -> torch.Tensor:
        """logits with every token not allowed next set to -inf (unchanged when unconstrained)."""
        allowed = self.allowed()
        if allowed is None:
            return logits
        masked = torch.full_like(logits, float("-inf"))
        index = torch.tensor(allowed, device=logits.device)
        masked[index] = logits[index]
        return masked


def conversation_texts(messages: Iterable[dict]) -> list[str]:
    """The texts a grounded name may come from: every non-system message's content and reference."""
    texts: list[str] = []
    for m in messages:
        if m.get("role") == "system":
            continue
        for key in ("content", "reference"):
            value = m.get(key)
            if isinstance(value, str):
                texts.append(value)
    return texts
