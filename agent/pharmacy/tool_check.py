"""The tool that answers what a call asks, where the call's own arguments show it is another tool's question.

The router chooses the first call's tool from the words; where it or the model confuses two questions, the
arguments show it:
- check_interactions of one medicine and diseases only (["Advil", "asthma"], ["aleve", "stomach ulcer"]): whether
  a medicine suits someone with a disease is check_contraindications' question, and that tool also reads the
  patient's age, pregnancy and other conditions (the interaction check answers a disease without them). A
  condition the patient takes (`taken` in conditions.json: alcohol) stays an interaction. One medicine beside
  an entry no one wrote (the data reads it as nothing and the patient's words lack it: "aateşi" beside "delsym"
  for "delsym verebilir miyim ona") is asked the same way, where the patient names no other medicine to pair.
- get_drug_info's warnings or interactions of a medicine, where the patient's latest message names a food or a
  condition they take ("can I have a few drinks of alcohol on it"), or asks of their medicines together
  ("ikisinin birlikte kullanımı", medicine_check.group_asked): whether they go together is check_interactions'
  question, answered for them rather than with the leaflet's whole section.
- calculate_dose with a weight the patient's words do not give ("oğlum 10 yaşında, aerius dozu ne olmalı" called
  with weight_kg 10): a dose for a made-up weight is a guess, so the question is the leaflet's, get_drug_info's
  dosage (calculate_dose itself refuses such a weight and asks for it).
The call keeps its medicine and the patient's words; only the tool that reads them changes.
"""

from __future__ import annotations

from .drugdb import load_db
from .medicine_check import grounded_list, group_asked, non_medicines
from .named import patient_medicines, same_medicine
from .router import route_text
from .text import fold
from .tools import maybe_number
from .turn import patient_words, read_turn

# get_drug_info sections a question of a medicine taken with something is asked as
_PAIR_SECTIONS = ("warnings", "interactions")


def _as_contraindication(drugs: list, conversation: list[dict]) -> dict | None:
    """check_contraindications' arguments for a list of one medicine and diseases only, else None. An entry that
    the data reads as nothing and the patient never wrote ("aateşi" beside "delsym") is no one's: with it, one
    medicine alone is also asked of the one who takes it, where the patient names no other medicine."""
    db = load_db()
    if not all(isinstance(d, str) for d in drugs):
        return None
    medicines = [d for d in drugs if db.resolve(d).target is not None]
    diseases = [d for d in drugs if db.diseases(d)]
    words = fold(patient_words(conversation) or "")
    nobodys = [
        d for d in drugs if d not in medicines and d not in diseases and not db.is_taken(d) and fold(d) not in words
    ]
    if len(medicines) != 1 or len(medicines) + len(diseases) + len(nobodys) != len(drugs):
        return None
    if not diseases and not (nobodys and len(patient_medicines(conversation)) <= 1):
        return None
    return {"drug": medicines[0], "conditions": diseases} if diseases else {"drug": medicines[0]}


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
        "a medicine's warnings asked with a food, alcohol or the patient's other medicines to check_interactions, "
        "a dose for a weight the patient did not give to get_drug_info's dosage"
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
                if (asked := _as_contraindication(grounded_list(drugs, conversation), conversation)) is not None:
                    call = {**call, "name": "check_contraindications", "arguments": asked}
            elif call.get("name") == "get_drug_info" and args.get("section") in _PAIR_SECTIONS:
                if isinstance(drug, str) and (with_it := _asked_with(drug, conversation)):
                    call = {**call, "name": "check_interactions", "arguments": {"drugs": [drug, *with_it]}}
            elif call.get("name") == "calculate_dose" and isinstance(drug, str):
                if not read_turn(conversation).gives_weight(maybe_number(args.get("weight_kg"))):
                    call = {**call, "name": "get_drug_info", "arguments": {"drug": drug, "section": "dosage"}}
            out.append(call)
        return out
