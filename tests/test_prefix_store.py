"""agent.engine.prefix_store: prefix states filed on disk, keyed by fingerprint and exact ids, bounded."""

from __future__ import annotations

import os
import stat

import pytest

from agent.engine.prefix_store import PrefixStore, UnsafePrefixFolder


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

    model, tokenizer = (
        AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        AutoTokenizer.from_pretrained(tiny_model_dir),
    )
    return CachedGenerator(model, tokenizer, prefix_store=PrefixStore(folder))


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


def _other_owned_folder(tmp_path):
    """A real folder this process did not make its own: chowned to nobody as root, else the root of the disk."""
    if os.geteuid() == 0:
        folder = tmp_path / "theirs"
        folder.mkdir(mode=0o700)
        os.chown(folder, 65534, 65534)
        return folder
    return type(tmp_path)("/")


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777, 0o722])
def test_a_folder_others_can_write_is_refused_and_nothing_in_it_is_loaded(tmp_path, mode):
    """A state planted in a world-writable $PPSF_PREFIXES used to be loaded into the model's cache."""
    folder = tmp_path / "shared"
    folder.mkdir()
    trusted = PrefixStore(folder)
    key = trusted.key("m", [1])
    trusted.save(key, b"planted")
    os.chmod(folder, mode)
    store = PrefixStore(folder)
    for attempt in (lambda: store.load(key), lambda: store.save(key, b"mine")):
        with pytest.raises(UnsafePrefixFolder, match="others can write") as raised:
            attempt()
        assert str(folder) in str(raised.value) and "chmod go-w" in str(raised.value)
    os.chmod(folder, 0o700)
    assert PrefixStore(folder).load(key) == b"planted"  # the folder made private again is used


def test_a_folder_of_another_user_is_refused(tmp_path):
    folder = _other_owned_folder(tmp_path)
    store = PrefixStore(folder)
    with pytest.raises(UnsafePrefixFolder, match="is owned by user 65534|is owned by user 0"):
        store.load(store.key("m", [1]))


def test_a_state_file_of_another_user_or_others_can_write_is_refused(tmp_path):
    store = PrefixStore(tmp_path)
    key = store.key("m", [1])
    store.save(key, b"x")
    os.chmod(tmp_path / key, 0o666)
    with pytest.raises(UnsafePrefixFolder, match=f"{key}.*others can write"):
        store.load(key)


def test_the_folder_the_store_makes_is_private(tmp_path):
    old = os.umask(0o002)  # a umask that makes group-writable folders (common with per-user groups)
    try:
        store = PrefixStore(tmp_path / "made" / "prefixes")
        store.save(store.key("m", [1]), b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "made" / "prefixes").stat().st_mode) == 0o700
    assert store.load(store.key("m", [1])) == b"x"


def test_the_cli_names_an_unsafe_prefix_folder_in_one_line(tmp_path):
    import subprocess
    import sys

    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)
    env = {**os.environ, "PPSF_PREFIXES": str(folder), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "agent", "Parol ne işe yarar?", "--max-new-tokens", "4"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"error: the prefix folder {folder}" in done.stderr and "others can write" in done.stderr
