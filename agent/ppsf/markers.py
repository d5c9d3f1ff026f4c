"""The block markers of PPSF v1.1, split by who writes them."""

from __future__ import annotations

# Blocks an assistant turn may write, and blocks only the prompt writes (the agent stops on these).
ASSISTANT_MARKERS = ("@THOUGHT", "@PHARMACIST", "@TOOL_CALL")
FOREIGN_MARKERS = ("@PATIENT", "@TOOL_RESPONSE", "@SYSTEM", "@REFERENCE", "@TOOLS", "@FORMAT")
