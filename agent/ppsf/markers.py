"""The block markers of PPSF v1.1, split by who writes them."""

from __future__ import annotations

# Blocks an assistant turn may write, and blocks only the prompt writes (the agent stops on these).
ASSISTANT_MARKERS = ("@THOUGHT", "@PHARMACIST", "@TOOL_CALL")
FOREIGN_MARKERS = ("@PATIENT", "@TOOL_RESPONSE", "@SYSTEM", "@REFERENCE", "@TOOLS", "@FORMAT")
# Where a model's turn has ended for certain: a line that opens a block only the prompt writes. PPSF has no
# end-of-turn token, so servers and generate() stop on these (generation_config.json of an export, the openai
# backend's `stop`).
STOP_STRINGS = tuple(f"\n{marker}" for marker in FOREIGN_MARKERS)
