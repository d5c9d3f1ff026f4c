"""PPSF v1.1, the format: its markers, its chat and response templates, and tokenizers that use them.

The templates are package data (`template.jinja`) and code (`response_template()`), so an installed package
has them; the Hub repo's files (`chat_template.jinja`, `tokenizer_config.json`) are generated from here by
scripts/build_repo.py. See docs/format.md for the spec.
"""

from .markers import ASSISTANT_MARKERS, FOREIGN_MARKERS, STOP_STRINGS
from .parsing import PARSE_PIECE, feed, parse_reply
from .templates import chat_template, response_template, template_source
from .tokenizers import REPO_ROOT, PPSFRepoError, load_gguf_tokenizer, load_tokenizer, use_ppsf

__all__ = [
    "ASSISTANT_MARKERS",
    "FOREIGN_MARKERS",
    "PARSE_PIECE",
    "REPO_ROOT",
    "STOP_STRINGS",
    "PPSFRepoError",
    "chat_template",
    "feed",
    "load_gguf_tokenizer",
    "load_tokenizer",
    "parse_reply",
    "response_template",
    "template_source",
    "use_ppsf",
]
