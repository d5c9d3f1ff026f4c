"""agent.engine.prefix_store: prefix states filed on disk, keyed by fingerprint and exact ids, bounded."""

from __future__ import annotations

import os

from agent.engine.prefix_store import PrefixStore


def test_a_state_is_filed_under_its_fingerprint_and_exact_ids(tmp_path):
    store = PrefixStore(tmp_path / "p")
    key = store.key("model-a", [1, 2, 3])
    assert store.load(key) is None  # nothing yet, and no folder needed to say so
    store.save(key, b"state")
    assert store.load(key) == b"state"
    assert (
        len({key, store.key("model-b", [1, 2, 3]), store.key("model-a", [1, 2, 3, 4]), store.key("model-a", [12, 3])})
        == 4
    )
    assert [p.name for p in (tmp_path / "p").iterdir()] == [key]  # no temporary file left behind
    store.drop(key)
    assert store.load(key) is None


def test_only_the_most_recently_used_states_are_kept(tmp_path):
    store = PrefixStore(tmp_path, max_files=2)
    keys = [store.key("m", [i]) for i in range(3)]
    for age, key in enumerate(keys):
        store.save(key, b"x")
        os.utime(tmp_path / key, (1000 + age, 1000 + age))  # saved one after another
    assert store.load(keys[0]) is None and store.load(keys[1]) == b"x"  # the oldest went when the third came
    store.load(keys[1])  # used: now the newest
    os.utime(tmp_path / keys[2], (900, 900))
    store.save(store.key("m", [9]), b"y")
    assert sorted(p.name for p in tmp_path.glob("*.kv")) == sorted([keys[1], store.key("m", [9])])
