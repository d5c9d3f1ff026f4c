"""The tool that answers what a call asks, where the call's own arguments show it is another tool's question.

The router chooses the first call's tool from the words, and two questions it confuses show in the arguments:
- check_interactions of one medicine and diseases only (["Advil", "asthma"], ["aleve", "stomach ulcer"]): whether
  a medicine suits someone with a disease is check_contraindications' question, and that tool also reads the
  patient's age, pregnancy and other conditions (the interaction check answers a disease without them). A
  condition the patient takes (`taken` in conditions.json: alcohol) stays an interaction.
- get_drug_info's warnings or interactions of a medicine, where the patient's latest message names a food or a
  condition they take ("can I have a few drinks of alcohol on it"), or asks of their medicines together
  ("ikisinin birlikte kullanımı", medicine_check.group_asked): whether they go together is check_interactions'
  question, answered for them rather than with the leaflet's whole section.
The call keeps its medicine and the patient's words; only the tool that reads them changes.
"""

from __future__ import annotations

from .drugdb import load_db
from .medicine_check import grounded_list, group_asked, non_medicines
from .named import same_medicine
from .router import route_text

# get_drug_info sections a question of a medicine taken with something is asked as
_PAIR_SECTIONS = ("warnings", "interactions")


def _as_contraindication(drugs: list) -> dict | None:
    """check_contraindications' arguments for a list of one medicine and diseases only, else None."""
    db = load_db()
    if not all(isinstance(d, str) for d in drugs):
        return None
    medicines = [d for d in drugs if db.resolve(d).target is not None]
    diseases = [d for d in drugs if db.diseases(d)]
    if len(medicines) != 1 or not diseases or len(medicines) + len(diseases) != len(drugs):
        return None
    return {"drug": medicines[0], "conditions": diseases}


def _taken_with(conversation: list[dict]) -> list[str]:
    """The foods and conditions taken ("alkol", "greyfurt") that the patient's latest message names."""
    db = load_db()
    return [text for text in non_medicines(route_text(conversation)) if db.is_taken(text)]


def _asked_with(drug: str, conversation: list[dict]) -> list[str]:
    """What the latest message asks drug (a medicine) to be taken with: the foods and conditions taken it names,
    else the patient's other medicines where it asks of them together; [] where neither."""
    db = load_db()
    target = db.resolve(drug).target
    if target is None:
        return []
    if taken := _taken_with(conversation):
        return taken
    return [m for m in group_asked(conversation) if not same_medicine(db.resolve(m).target, target)]


class AnsweringTool:
    """CallsCheck: a call's tool set to the one that answers what its arguments ask (module doc)."""

    name = "answering_tool"
    note = (
        "a call's tool was set to the one its arguments ask: a medicine with diseases to check_contraindications, "
        "a medicine's warnings asked with a food, alcohol or the patient's other medicines to check_interactions"
    )

    def calls(self, calls: list[dict], conversation: list[dict]) -> list[dict]:
        out = []
        for call in calls:
            args = call.get("arguments")
            if not isinstance(args, dict):
                out.append(call)
                continue
            drugs, drug = args.get("drugs"), args.get("drug")
            if call.get("name") == "check_interactions" and isinstance(drugs, list):
                # read as the medicine check will ground it: "inhaler" beside "Advil" is the asthma the message names
                if (asked := _as_contraindication(grounded_list(drugs, conversation))) is not None:
                    call = {**call, "name": "check_contraindications", "arguments": asked}
            elif call.get("name") == "get_drug_info" and args.get("section") in _PAIR_SECTIONS:
                if isinstance(drug, str) and (with_it := _asked_with(drug, conversation)):
                    call = {**call, "name": "check_interactions", "arguments": {"drugs": [drug, *with_it]}}
            out.append(call)
        return out
