"""training/check_pool.py: the patient-written pools train nothing they should not."""

from __future__ import annotations

import json

import check_pool


def test_the_checked_in_pools_pass():
    refused, _ = check_pool.check(check_pool.POOLS)
    assert refused == []


def _pool(tmp_path, rows: list[dict]):
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_each_bad_row_is_refused_with_its_reason(tmp_path):
    taken = json.loads(check_pool.POOLS[0].read_text(encoding="utf-8").splitlines()[0])["id"]
    held_out = json.loads((check_pool.ROOT / "eval" / "freetext_dev.jsonl").read_text().splitlines()[0])
    held_text = held_out.get("query") or held_out["messages"][-1]["content"]
    call = {"name": "search_drug", "arguments": {"drug": "Parol"}}
    rows = [
        {"id": "X-1", "text": "parol ne icin", "lang": "tr", "expected": [call]},  # passes
        {"id": "X-2", "text": "hi", "lang": "de", "expected": []},
        {"id": taken, "text": "parol?", "lang": "tr", "expected": [call]},
        {"id": "X-1", "text": "parol??", "lang": "tr", "expected": [call]},
        {"id": "X-3", "text": f"  {held_text.upper()} ", "lang": "en", "expected": []},
        {
            "id": "X-4",
            "text": "flurbo ne",
            "lang": "tr",
            "expected": [{"name": "search_drug", "arguments": {"drug": "Flurbo"}}],
        },
        {"id": "X-5", "text": "a", "lang": "en", "expected": [{"name": "no_such_tool", "arguments": {}}]},
        {"id": "X-6", "messages": [{"role": "user", "content": "a"}], "lang": "en", "expected": []},
    ]
    refused, _ = check_pool.check([_pool(tmp_path, rows)])
    reasons = "\n".join(refused)
    assert len(refused) == 7 and "pool.jsonl:1" not in reasons
    assert "'lang' is 'de'" in reasons
    assert f"id {taken} is taken" in reasons and "id X-1 is taken (pool.jsonl)" in reasons
    assert "X-3: its last message is an eval case's" in reasons
    assert "X-4: search_drug: 'Flurbo' is not in the drug database" in reasons
    assert "X-5: no_such_tool" in reasons
    assert "'messages' must be user, assistant, ..., user" in reasons


def test_an_unrecognised_condition_is_a_note_not_a_refusal(tmp_path):
    call = {"name": "check_contraindications", "arguments": {"drug": "Parol", "conditions": ["blorbitis"]}}
    rows = [{"id": "X-1", "text": "blorbitis var parol olur mu", "lang": "tr", "expected": [call]}]
    refused, notes = check_pool.check([_pool(tmp_path, rows)])
    assert refused == [] and notes == ["pool.jsonl:1 X-1: check_contraindications: condition not recognised: blorbitis"]
