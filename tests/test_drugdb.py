"""The drug data layer: data files, their validation, name folding and matching."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.pharmacy.drugdb import (
    DATA_DIR,
    DATA_FILES,
    REFERENCE_FILE,
    SECTIONS,
    DrugDataError,
    Target,
    fold,
    load_db,
    read_db,
    squash,
)

DB = load_db()


def _ids(name: str) -> set[str]:
    res = DB.resolve(name)
    assert res.status == "found", (name, res)
    return set(DB.ingredient_ids(res.target))


# ---------------------------------------------------------------- the shipped data


def test_packaged_data_loads_once():
    assert load_db() is DB
    assert load_db(None) is DB


def test_data_size_and_required_brands():
    assert len(DB.ingredients) >= 60
    assert len(DB.interactions) >= 40
    brands = {p["brand"] for p in DB.products.values()}
    for brand in [
        "Parol",
        "Arveles",
        "Majezik",
        "Augmentin",
        "Nurofen",
        "Aspirin",
        "Coraspin",
        "Apranax",
        "Calpol",
        "Tylenol",
        "Gripin",
    ]:
        assert brand in brands


def test_every_ingredient_is_bilingual_with_all_sections_and_sources():
    for ing in DB.ingredients.values():
        assert ing["name_tr"] and ing["name_en"] and ing["usage_tr"] and ing["usage_en"] and ing["source"]
        assert ing["status"] in ("Rx", "OTC")
        assert set(ing["sections"]) == set(SECTIONS)
        for section in ing["sections"].values():
            assert section["tr"] != section["en"] or section["tr"].isascii()
            assert section["source"]
        assert ing["safety"]["source"]


def test_every_interaction_and_dose_rule_has_a_source():
    for ix in DB.interactions:
        assert ix["source"] and ix["description_tr"] and ix["management_en"]
    for rule in DB.dose_rules.values():
        assert rule["source"]
    assert {"paracetamol", "ibuprofen"} <= set(DB.dose_rules)


def test_gripin_is_a_paracetamol_combination():
    gripin = _ids("Gripin")
    assert "paracetamol" in gripin and len(gripin) > 1
    assert _ids("Parol") == {"paracetamol"}


@pytest.mark.parametrize(
    ("a", "b", "severity"),
    [
        ("warfarin", "acetylsalicylic_acid", "major"),
        ("warfarin", "ibuprofen", "major"),
        ("sildenafil", "glyceryl_trinitrate", "contraindicated"),
        ("tadalafil", "isosorbide_mononitrate", "contraindicated"),
        ("clarithromycin", "simvastatin", "contraindicated"),
        ("sertraline", "tramadol", "major"),
        ("methotrexate", "naproxen", "major"),
        ("ramipril", "spironolactone", "major"),
        ("metformin", "iohexol", "major"),
        ("ibuprofen", "naproxen", "major"),
    ],
)
def test_well_known_interactions_are_present(a, b, severity):
    found = DB.interactions_between(a, b)
    assert [ix["severity"] for ix in found] == [severity]
    assert DB.interactions_between(b, a) == found


def test_specific_interaction_entry_replaces_the_class_entry():
    # warfarin + aspirin has its own entry; aspirin is no NSAID-class member, so exactly one hit.
    (hit,) = DB.interactions_between("warfarin", "acetylsalicylic_acid")
    assert hit["b"] == "acetylsalicylic_acid"
    assert DB.interactions_between("paracetamol", "paracetamol") == []
    assert DB.interactions_between("cetirizine", "paracetamol") == []


# ---------------------------------------------------------------- validation of broken copies


def _copy(tmp_path: Path) -> Path:
    for name in (*DATA_FILES, REFERENCE_FILE):
        shutil.copy(DATA_DIR / f"{name}.json", tmp_path / f"{name}.json")
    return tmp_path


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc["entries"])
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def test_a_valid_copy_loads(tmp_path):
    db = load_db(_copy(tmp_path))
    assert db is not DB and set(db.ingredients) == set(DB.ingredients)


def test_missing_required_property_names_file_and_entry(tmp_path):
    base = _copy(tmp_path.resolve())
    drug_id = json.loads((base / "drugs.json").read_text(encoding="utf-8"))["entries"][3]["id"]
    _edit(base / "drugs.json", lambda e: e[3].pop("usage_tr"))
    with pytest.raises(DrugDataError) as err:
        load_db(base)
    assert str(err.value) == f"{base / 'drugs.json'}: entry '{drug_id}' (index 3): 'usage_tr' is a required property"


def test_packaged_path_is_shown_relative(tmp_path, monkeypatch):
    # The packaged files are named as "agent/pharmacy/data/<file>"; break one through a patched reader.
    real = Path.read_text

    def broken(self, *args, **kwargs):
        text = real(self, *args, **kwargs)
        if self.name == "products.json" and self.parent == DATA_DIR:
            doc = json.loads(text)
            doc["entries"][0]["status"] = "maybe"
            return json.dumps(doc)
        return text

    monkeypatch.setattr(Path, "read_text", broken)
    with pytest.raises(
        DrugDataError,
        match=r"^agent/pharmacy/data/products\.json: entry 'parol' \(index 0\): 'maybe' "
        r"is not one of \['Rx', 'OTC'\] \(at status\)$",
    ):
        read_db(DATA_DIR)


@pytest.mark.parametrize(
    ("file", "change", "message"),
    [
        (
            "interactions.json",
            lambda e: e[0].update(b="unobtainium"),
            r"interactions\.json: entry 'warfarin\+unobtainium' \(index 0\): unknown ingredient 'unobtainium'",
        ),
        (
            "interactions.json",
            lambda e: e[1].update(b="class:nonexistent"),
            r"interactions\.json: entry 'warfarin\+class:nonexistent' \(index 1\): unknown class",
        ),
        ("interactions.json", lambda e: e.append(dict(e[0])), r"interactions\.json: entry .*: duplicate pair"),
        (
            "products.json",
            lambda e: e[0].update(ingredients=["unobtainium"]),
            r"products\.json: entry 'parol' \(index 0\): unknown ingredient 'unobtainium'",
        ),
        (
            "products.json",
            lambda e: e[1].update(brand="PAROL"),
            r"products\.json: entry 'calpol' \(index 1\): name 'PAROL' is already used by product 'parol'",
        ),
        (
            "products.json",
            lambda e: e[0]["presentations"][0].update(mg_per_ml=100),
            r"products\.json: entry 'parol' \(index 0\): mg_per_ml on a non-liquid form",
        ),
        (
            "drugs.json",
            lambda e: e[0]["safety"]["conditions"].update(unobtainium="avoid"),
            r"drugs\.json: entry 'paracetamol' \(index 0\): unknown condition 'unobtainium'",
        ),
        (
            "drugs.json",
            lambda e: e[1].update(id="paracetamol"),
            r"drugs\.json: entry 'paracetamol' \(index 1\): "
            r"duplicate id",
        ),
        (
            "drugs.json",
            lambda e: e[0]["sections"].pop("overdose"),
            r"drugs\.json: entry 'paracetamol' \(index 0\): 'overdose' is a required property \(at sections\)",
        ),
        (
            "dosing.json",
            lambda e: e[0].update(id="warfarin"),
            r"dosing\.json: entry 'warfarin' \(index 0\): high-risk ingredients must not have a dose rule",
        ),
        ("dosing.json", lambda e: e[0].update(max_doses_per_day=0), r"dosing\.json: entry 'paracetamol' \(index 0\)"),
        ("conditions.json", lambda e: e[0].update(synonyms=[]), r"conditions\.json: entry 'asthma' \(index 0\)"),
    ],
)
def test_broken_data_fails_loudly(tmp_path, file, change, message):
    base = _copy(tmp_path)
    _edit(base / file, change)
    with pytest.raises(DrugDataError, match=message):
        load_db(base)


def test_invalid_json_and_missing_file(tmp_path):
    base = _copy(tmp_path)
    (base / "dosing.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DrugDataError, match=r"dosing\.json: not valid JSON"):
        load_db(base)
    (base / "dosing.json").unlink()
    with pytest.raises(DrugDataError, match=r"dosing\.json: file is missing"):
        load_db(str(base))


# ---------------------------------------------------------------- folding and matching


def test_fold_handles_turkish_i_and_diacritics():
    assert fold("İBUPROFEN") == fold("IBUPROFEN") == fold("ıbuprofen") == "ibuprofen"
    assert "i̇" not in fold("İstanbul")  # no combining dot from str.lower()
    assert fold("Paról") == fold("PAROL") == "parol"
    assert fold("Ürikoliz") == "urikoliz"
    assert squash(fold("co-trimoxazole")) == squash(fold("Co Trimoxazole"))


@pytest.mark.parametrize(
    ("query", "expected", "lang", "corrected"),
    [
        ("Parol", Target("product", "parol"), "tr", False),
        ("PAROL", Target("product", "parol"), "tr", False),
        ("Paról", Target("product", "parol"), "tr", False),
        ("paroll", Target("product", "parol"), "tr", False),  # a doubled letter is a spelling, not a typo
        ("augmentn", Target("product", "augmentin"), "tr", True),
        ("siprofloksasin", Target("ingredient", "ciprofloxacin"), "tr", False),
        ("ciprofloxacine", Target("ingredient", "ciprofloxacin"), "en", False),
        ("Augmentin BID 1000 mg", Target("product", "augmentin"), "tr", False),
        ("Parol 500 mg tablet", Target("product", "parol"), "tr", False),
        ("parasetamol", Target("ingredient", "paracetamol"), "tr", False),
        ("paracetamol", Target("ingredient", "paracetamol"), "en", False),
        ("acetaminophen", Target("ingredient", "paracetamol"), "en", False),
        ("Tylenol", Target("product", "tylenol"), "en", False),
        ("İBUPROFEN", Target("ingredient", "ibuprofen"), "tr", False),
        ("ibuprofen", Target("ingredient", "ibuprofen"), "en", False),
        ("asprin", Target("product", "aspirin"), "tr", True),
        ("klaritromisin", Target("ingredient", "clarithromycin"), "tr", False),
        ("trimethoprim sulfamethoxazole", Target("ingredient", "cotrimoxazole"), "en", False),
    ],
)
def test_resolve(query, expected, lang, corrected):
    res = DB.resolve(query)
    assert (res.status, res.target, res.lang, res.corrected) == ("found", expected, lang, corrected)


def test_ambiguous_names_return_candidates_not_a_guess():
    # "Calpol 6" sits between two strengths: a silent pick could give the wrong mL.
    res = DB.resolve("Calpol 6")
    assert res.status == "ambiguous"
    assert set(res.candidates) == {Target("product", "calpol"), Target("product", "calpol_6_plus")}
    # Too short to correct, too far to offer as a match: a suggestion only.
    res = DB.resolve("par")
    assert res.status == "unknown" and Target("product", "parol") in res.candidates
    # An unknown product line whose name contains a brand is not taken for the brand.
    res = DB.resolve("Mucosolvan Plus")
    assert res.status == "unknown" and res.target is None


def test_unknown_names():
    assert DB.resolve("qwxzv").status == "unknown"
    # A short synonym (NAC) inside a longer word is no match.
    res = DB.resolve("panacea")
    assert res.status == "unknown" and Target("ingredient", "acetylcysteine") != res.target


def test_suggestions_are_names_close_to_what_was_written():
    # Ordinary words and medicines the data lacks get no unrelated medicine ("Ozempic" drew carbamazepine at 55).
    for text in ("karnimin sag", "defa", "Eski", "Ozempic", "Mounjaro", "Bepanthen krem", "Kelvimax"):
        res = DB.resolve(text)
        assert (res.status, res.candidates) == ("unknown", []), text
    # A name with two wrong letters, too far to correct, is still offered.
    assert DB.resolve("nurafin").candidates == [Target("product", "nurofen")]


def test_single_deletion_typos_never_switch_active_ingredient():
    names = [(text, Target("product", p["id"])) for p in DB.products.values() for text in [p["brand"], *p["aliases"]]]
    names += [
        (text, Target("ingredient", i["id"]))
        for i in DB.ingredients.values()
        for text in [i["name_tr"], i["name_en"], *i["synonyms_tr"], *i["synonyms_en"]]
    ]
    for text, target in names:
        key = fold(text)
        for pos in range(len(key)):
            typo = key[:pos] + key[pos + 1 :]
            res = DB.resolve(typo)
            if res.status == "found" and res.corrected:  # "avil" is Advil less a letter, and a brand of its own
                assert set(DB.ingredient_ids(res.target)) == set(DB.ingredient_ids(target)), (text, typo)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_resolve_never_raises(text):
    res = DB.resolve(text)
    assert res.status in ("found", "ambiguous", "unknown", "not_in_database")


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("astım", ["asthma"]),
        ("asthma", ["asthma"]),
        ("ASTIM", ["asthma"]),
        ("asthama", ["asthma"]),
        ("böbrek yetmezliği", ["kidney_failure"]),
        ("kidney failure", ["kidney_failure"]),
        ("ağır böbrek yetmezliği", ["kidney_failure"]),
        ("mide ülseri", ["peptic_ulcer"]),
        ("peptic ulcer", ["peptic_ulcer"]),
        ("history of stomach ulcers", ["peptic_ulcer"]),
        ("düşük tansiyon", ["hypotension"]),
        ("astımım ve böbrek yetmezliğim var", ["asthma", "kidney_failure"]),
        ("penisilin alerjisi", ["penicillin_allergy"]),
        ("uçuk", []),
    ],
)
def test_match_conditions(text, ids):
    assert DB.match_conditions(text) == ids
