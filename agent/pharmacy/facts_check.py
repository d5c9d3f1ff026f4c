"""The patient's facts in a call: weight, age, pregnancy, breastfeeding and conditions as their words state them.

The model chooses the tool and the medicine; the facts of the patient come from what they wrote, read as the
tools read them (agent.pharmacy.tools.as_stated: the weight and age with their units, a pregnancy stated of the
one who takes the medicine, a condition in the patient's words). The call then says what the tool checks.
"""

from __future__ import annotations

from .tools import as_stated
from .turn import read_turn


class StatedFacts:
    """CallCheck: calculate_dose's and check_contraindications' patient facts as the patient states them."""

    name = "stated_facts"
    note = "the call's weight, age, pregnancy, breastfeeding and conditions were set as the patient's words state them"

    def arguments(self, tool: str, arguments: dict, conversation: list[dict]) -> dict:
        return as_stated(tool, arguments, read_turn(conversation))
