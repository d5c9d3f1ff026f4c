"""The facts of a patient's turn (agent.pharmacy.turn): read once, with negation and whose, and used by the tools."""

from __future__ import annotations

import pytest

from agent.engine.toolbox import Toolbox, tool_schema
from agent.pharmacy.prompts import tool_context
from agent.pharmacy.tools import PHARMACY_TOOLS, calculate_dose, check_contraindications
from agent.pharmacy.turn import SELF, Age, Stated, Turn, read_text, read_turn


def states(turn: Turn) -> list[tuple[str, bool, str | None]]:
    return [(s.state, s.denied, s.subject) for s in turn.states]


@pytest.mark.parametrize(
    ("text", "mentions", "about", "pregnant"),
    [
        ("hamile değilim", [("pregnant", True, SELF)], None, False),
        ("hamile degilim", [("pregnant", True, SELF)], None, False),
        ("I'm not pregnant", [("pregnant", True, SELF)], None, False),
        ("hamileyim, parol alabilir miyim?", [("pregnant", False, SELF)], SELF, True),
        # The known bug: the wife's pregnancy is not the asker's.
        ("Eşim hamile, ben ibuprofen alabilir miyim?", [("pregnant", False, "spouse")], SELF, False),
        ("esim hamile, ben ibuprofen alabilir miyim?", [("pregnant", False, "spouse")], SELF, False),
        ("my wife is pregnant, can I take ibuprofen?", [("pregnant", False, "spouse")], SELF, False),
        # ... and it is hers when the medicine is for her.
        ("Eşim hamile, ona Parol verebilir miyim?", [("pregnant", False, "spouse")], "spouse", True),
        ("esim hamile, ona parol verebilir miyim", [("pregnant", False, "spouse")], "spouse", True),
        ("Eşim hamile, eşime parol verebilir miyim?", [("pregnant", False, "spouse")], "spouse", True),
        ("kızım hamile, kullanabilir mi?", [("pregnant", False, "daughter")], "daughter", True),
        ("Can my pregnant wife take ibuprofen?", [("pregnant", False, "spouse")], "spouse", True),
        ("My wife is pregnant. Can she take Tylenol?", [("pregnant", False, "spouse")], "spouse", True),
        ("My wife is pregnant, can I give her Tylenol?", [("pregnant", False, "spouse")], "spouse", True),
        # The asker pregnant, the medicine for the child: not the child's pregnancy.
        ("hamileyim, kızıma parol verebilir miyim?", [("pregnant", False, SELF)], "daughter", False),
        # Nobody named as the one who takes it: a stated pregnancy may be theirs, so it counts.
        ("Annem hamile, parol?", [("pregnant", False, "mother")], None, True),
        ("kızım hamile değil, ben parol alabilir miyim", [("pregnant", True, "daughter")], SELF, False),
    ],
)
def test_pregnancy_is_read_with_its_negation_and_whose_it_is(text, mentions, about, pregnant):
    turn = read_text(text)
    assert states(turn) == mentions
    assert turn.about == about
    assert turn.counts("pregnant") is pregnant


def test_breastfeeding_is_the_asker_s_not_the_baby_s():
    own = read_text("bebeğimi emziriyorum, parol alabilir miyim?")
    assert states(own) == [("breastfeeding", False, SELF)] and own.counts("breastfeeding")
    baby = read_text("emziriyorum, bebeğime parol verebilir miyim?")
    assert baby.about == "baby" and not baby.counts("breastfeeding")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("böbrek hastalığım yok", [Stated("kidney_failure", True, None)]),
        ("bobrek hastaligim yok", [Stated("kidney_failure", True, None)]),
        ("böbrek hastasıyım", [Stated("kidney_failure", False, None)]),
        ("no kidney disease, can I take ibuprofen", [Stated("kidney_failure", True, None)]),
        ("annemin böbrek hastalığı yok", [Stated("kidney_failure", True, "mother")]),
        ("ben böbrek hastasıyım", [Stated("kidney_failure", False, SELF)]),
    ],
)
def test_conditions_are_read_with_their_negation_and_whose(text, found):
    assert list(read_text(text).conditions) == found


def test_a_condition_is_denied_only_for_the_one_it_is_denied_of():
    assert read_text("böbrek hastalığım yok, nurofen alabilir miyim").denies("kidney_failure")
    assert not read_text("böbrek hastasıyım, nurofen alabilir miyim").denies("kidney_failure")
    # The mother has none; the asker says nothing of theirs (a later "benim var" names no condition).
    assert not read_text("annemin böbrek hastalığı yok, ben nurofen alabilir miyim").denies("kidney_failure")
    assert not read_text("astımım yok ama böbrek hastasıyım").denies("kidney_failure")


@pytest.mark.parametrize(
    "text", ["6 aylık hamileyim", "6 aylik hamileyim", "20 haftalık hamileyim", "I'm 6 months pregnant"]
)
def test_a_pregnancy_s_term_is_no_age(text):
    turn = read_text(text)
    assert turn.ages_months == () and turn.ages_years == ()
    assert not turn.gives_age(None, 6) and not turn.gives_age(6) and not turn.gives_age(None, 20)
    assert turn.counts("pregnant")


def test_ages_and_weights_are_read_as_written():
    turn = read_text("kızım 6 aylık, 7 kilo; oğlum 3 yaşında 30 lbs")
    assert turn.stated_numbers() == {"kg": [7.0], "lb": [30.0], "years": [3.0], "months": [6.0]}
    assert turn.gives_age(None, 6) and turn.language == "tr"
    assert not read_text("Parol dozu? 15 kilo").gives_age(1)
    assert read_text("I'm 35, 70 kg").gives_age(35) and not read_text("I'm 35, 70 kg").gives_age(36)


@pytest.mark.parametrize(
    ("text", "ages", "age"),
    [
        ("babam 82 yaşında, apranax verebilir miyiz ona", [(82, "years", "father")], Age(82, "years", "father")),
        ("2 yaşındaki kızımın her yeri kaşınıyor, ona piriton verebilir miyim",
         [(2, "years", "daughter")], Age(2, "years", "daughter")),
        # the son's age, the asker's question: no age of the one who takes the medicine
        ("oğluma antibiyotik yazıldı 7 yaşında. ben de tantum verde kullanabilir miyim", [(7, "years", "son")], None),
        ("kızım 6 aylık, oğlum 3 yaşında, ona verebilir miyim", [(6, "months", "daughter"), (3, "years", "son")],
         Age(3, "years", "son")),
        ("my 9 yo girl has a fever, can she have calpol", [(9, "years", "child")], Age(9, "years", "child")),
        ("I am 78 years old. Is xanax safe for me?", [(78, "years", SELF)], Age(78, "years", SELF)),
        # a breastfed baby's age is no age of the one breastfeeding, who takes it
        ("i'm breastfeeding my 2 month old, can i take sudafed", [(2, "months", "baby")], None),
        ("3 aylik bebegimi emziriyorum bu ilacı kullanmam sorun olur mu", [(3, "months", "baby")], None),
        ("5 aylık hamileyim, parol içebilir miyim", [], None),
        # two ages, nobody named as the one who takes it: neither is chosen
        ("30 yaşındayım, bebeğim 6 aylık, calpol?", [(30, "years", None), (6, "months", "baby")], None),
    ],
)  # fmt: skip
def test_an_age_is_read_with_whose_it_is(text, ages, age):
    turn = read_text(text)
    assert [(a.value, a.unit, a.subject) for a in turn.ages] == ages
    assert turn.stated_age() == age


def test_each_message_ends_a_clause():
    """The patient's messages are clauses of their own: a condition in the second is not the first's asker's."""
    turn = read_turn(
        [
            {"role": "user", "content": "i take euthyrox in the morning"},
            {"role": "assistant", "content": "Take it on an empty stomach."},
            {"role": "user", "content": "other thing - my son has asthma, can he take aleve"},
        ]
    )
    assert [(c.state, c.subject) for c in turn.conditions] == [("asthma", "son")] and turn.about == "son"


def test_a_turn_is_read_from_the_conversation():
    messages = [
        {"role": "system", "content": "hamileyim"},
        {"role": "user", "content": "apranax icebilir miyim?"},
        {"role": "assistant", "content": "Apranax bir ağrı kesicidir. Hamile misiniz?"},
        {"role": "user", "content": "evet"},
    ]
    turn = read_turn(messages)
    assert turn.words == "apranax icebilir miyim?\nHamile misiniz?\nevet" and turn.counts("pregnant")
    assert turn.about == SELF and turn.language == "tr"
    assert read_turn([]).words is None and read_turn([]).states == ()
    with pytest.raises(TypeError, match="list of chat messages"):
        read_turn("hamileyim")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a string"):
        read_text(None)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        turn.about = "spouse"  # type: ignore[misc]  # frozen


def agent_call(name: str, arguments: dict, text: str) -> dict:
    """A call as the agent makes it: the model's arguments, the Turn from the conversation as context."""
    context = tool_context([{"role": "user", "content": text}])
    assert isinstance(context["patient"], Turn) and "patient_text" not in context
    return Toolbox(PHARMACY_TOOLS).call(name, arguments, context)


def test_check_contraindications_checks_a_pregnancy_only_for_the_one_who_takes_the_medicine():
    call = {"drug": "ibuprofen", "pregnant": True}
    asker = agent_call("check_contraindications", call, "Eşim hamile, ben ibuprofen alabilir miyim?")
    assert asker["call_said"] == {"pregnant": True}  # it says pregnancy was not checked, and why not
    assert not any(r["factor"] == "Gebelik" for r in asker["reasons"]) and asker["verdict"] == "unknown"
    wife = agent_call("check_contraindications", call, "Eşim hamile, ona ibuprofen verebilir miyim?")
    assert "call_said" not in wife and any(r["factor"] == "Gebelik" for r in wife["reasons"])
    assert wife["verdict"] == "avoid"
    denied = agent_call("check_contraindications", call, "hamile degilim, ibuprofen alabilir miyim?")
    assert denied["call_said"] == {"pregnant": True} and denied["verdict"] == "unknown"


def test_check_contraindications_does_not_count_a_condition_the_patient_denies():
    call = {"drug": "Nurofen", "conditions": ["böbrek hastalığı"]}
    denied = agent_call("check_contraindications", call, "böbrek hastalığım yok, nurofen alabilir miyim?")
    assert denied["call_said"] == {"conditions": ["böbrek hastalığı"]}
    assert denied["reasons"] == [] and denied["not_counted"] == ["Böbrek yetmezliği"]
    stated = agent_call("check_contraindications", call, "böbrek hastasıyım, nurofen alabilir miyim?")
    assert "call_said" not in stated and [r["factor"] for r in stated["reasons"]] == ["Böbrek yetmezliği"]
    # Someone else's denial is not the asker's.
    mother = agent_call("check_contraindications", call, "annemin böbrek hastalığı yok, ben nurofen alabilir miyim?")
    assert mother["reasons"] == stated["reasons"]


def test_calculate_dose_reads_no_age_from_a_pregnancy_s_term():
    # The model took "6 aylık" for the age: a dose for a 6-month-old given to a pregnant adult.
    out = agent_call(
        "calculate_dose", {"drug": "Parol", "weight_kg": 60, "age_months": 6}, "6 aylık hamileyim, 60 kilo, parol dozu?"
    )
    assert out["error"]["code"] == "invalid_input" and out["error"]["for_patient"] is True
    baby = agent_call("calculate_dose", {"drug": "Calpol", "weight_kg": 7, "age_months": 6}, "kızım 6 aylık, 7 kilo")
    assert baby["per_dose_mg"] > 0 and baby["age_years"] == 0.5


def test_the_turn_is_the_agent_s_not_the_model_s():
    for fn in (calculate_dose, check_contraindications):
        shown = tool_schema(fn)["function"]["parameters"]["properties"]
        assert not {"patient", "patient_text", "language"} & set(shown)
    # A model that writes one is refused by the schema; a caller gives one or the other, never both.
    box = Toolbox(PHARMACY_TOOLS)
    refused = box.call("check_contraindications", {"drug": "Parol", "patient": "hamileyim"})
    assert refused["error"]["code"] == "invalid_arguments"
    both = check_contraindications("Parol", patient=read_text("hamileyim"), patient_text="hamileyim")
    assert both["error"] == {"code": "invalid_input", "message": "give patient or patient_text, not both"}
    wrong = check_contraindications("Parol", patient="hamileyim")
    assert wrong["error"]["message"] == "patient must be a Turn, not str"
    # patient_text is read into the same Turn.
    text = "Eşim hamile, ben ibuprofen alabilir miyim?"
    assert check_contraindications("ibuprofen", pregnant=True, patient_text=text) == check_contraindications(
        "ibuprofen", pregnant=True, patient=read_text(text)
    )
