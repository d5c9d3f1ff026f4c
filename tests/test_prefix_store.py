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


def _tiny_generator(tiny_model_dir, folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agent.engine.generation import CachedGenerator

    generator = CachedGenerator(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)
    )
    generator.prefix_store = PrefixStore(folder)
    return generator


PREFIX = "@FORMAT PPSF/1.0\n\n@SYSTEM\nYou are a pharmacist. Answer briefly.\n\n"


def test_only_the_prefix_goes_to_disk_never_the_conversation_after_it(tmp_path, tiny_model_dir):
    generator = _tiny_generator(tiny_model_dir, tmp_path)
    prompt = PREFIX + "@PATIENT\nMy name is Ayşe and my phone number is 555 0101.\n\n@PHARMACIST\n"
    generator.generate(prompt, max_new_tokens=2)
    generator.cache_prefix(PREFIX, "@")  # registered while the cache already holds the patient's message
    generator.generate(prompt, max_new_tokens=2)
    assert generator.prefixes and list(tmp_path.glob("*.kv")) == []  # kept in memory only
    fresh = _tiny_generator(tiny_model_dir, tmp_path)
    fresh.cache_prefix(PREFIX, "@")
    first = fresh.generate(prompt, max_new_tokens=4)
    assert first.cached_tokens == 0 and len(list(tmp_path.glob("*.kv"))) == 1  # the prefix alone, filed
    again = _tiny_generator(tiny_model_dir, tmp_path)
    again.cache_prefix(PREFIX, "@")
    second = again.generate(prompt, max_new_tokens=4)
    assert second.cached_tokens == len(fresh.encode(PREFIX, "@")) and second.text == first.text


def test_a_write_cut_short_leaves_no_file(tmp_path, monkeypatch):
    store = PrefixStore(tmp_path)

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("agent.engine.prefix_store.os.replace", interrupted)
    try:
        store.save(store.key("m", [1]), b"x" * 1000)
    except KeyboardInterrupt:
        pass
    assert list(tmp_path.iterdir()) == []
