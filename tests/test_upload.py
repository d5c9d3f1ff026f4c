"""Tests for upload.py: allowlist, validation before sending, the single commit, errors, token hygiene.

The Hub is never contacted: the network is replaced at the `HfApi` boundary (a fake api object or
monkeypatched `HfApi` methods), and the subprocess runs keep HF_HUB_OFFLINE=1 and a dead HF_ENDPOINT.
Every test works on a copy of the real repo's allowlisted files in tmp_path, so it can corrupt them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
UPLOAD_PY = REPO_ROOT / "upload.py"

_spec = importlib.util.spec_from_file_location("ppsf_upload", UPLOAD_PY)
assert _spec is not None and _spec.loader is not None
upload = importlib.util.module_from_spec(_spec)
sys.modules["ppsf_upload"] = upload
_spec.loader.exec_module(upload)

# A unique fake token per run: if it ever shows up in any output, the script leaked it.
SENTINEL = f"hf_sentinel{uuid.uuid4().hex}"

# The allowlist as the brief states it, written out independently of upload.py's constants.
REQUIRED = ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "README.md", "LICENSE"]
OPTIONAL = ["special_tokens_map.json", "docs/app.png"]
# The manual the card links to (and the pages those link to), so that the card's links work on the Hub.
OPTIONAL += [f"docs/{n}.md" for n in ("agent", "drug-data", "engines", "format", "publishing", "security", "tools")]
OPTIONAL += ["docs/training.md", "bench/README.md"]
ADAPTER_FILES = [
    "adapter/adapter_config.json",
    "adapter/adapter_model.safetensors",
    "adapter/README.md",
    "adapter/tools.json",
    "adapter/tools_shown.txt",
]
# Files that sit next to the real ones and must never be sent.
JUNK = {
    ".env": "HF_TOKEN=hf_dotenv_secret\n",
    ".venv/pyvenv.cfg": "home = /usr/bin\n",
    ".cache/huggingface/x.lock": "",
    "__pycache__/upload.cpython-311.pyc": "",
    "tests/test_something.py": "def test(): pass\n",
    "scripts/build_repo.py": "print('hi')\n",
    "notes.txt": "private notes\n",
    "tokenizer.json.bak": "{}",
    "additional_chat_templates/notes.txt": "not a template\n",
    "additional_chat_templates/.hidden.jinja": "{{ 'hidden' }}",
}
LINE = re.compile(r"^  (\S+)  (\d+) bytes$")
DRY_RUN_ID = "someone/ppsf-tokenizer"
COMMIT_URL = "https://huggingface.co/someone/ppsf-tokenizer/commit/0123456789abcdef"
PR_URL = "https://huggingface.co/someone/ppsf-tokenizer/discussions/7"


def _expected_paths(source: Path) -> set[str]:
    paths = set(REQUIRED)
    paths |= {name for name in OPTIONAL if (source / name).is_file()}
    templates = source / "additional_chat_templates"
    if templates.is_dir():
        paths |= {f"additional_chat_templates/{p.name}" for p in templates.glob("[!.]*.jinja")}
    return paths


@pytest.fixture(scope="session")
def expected_paths() -> set[str]:
    return _expected_paths(REPO_ROOT)


@pytest.fixture
def repo_dir(tmp_path: Path, expected_paths: set[str]) -> Path:
    """A copy of the real repo's allowlisted files, its golden examples and some junk, in tmp_path."""
    missing = [p for p in REQUIRED if not (REPO_ROOT / p).is_file()]
    assert not missing, f"the real repo lacks {missing}: run scripts/build_repo.py and write README.md"
    dst = tmp_path / "repo"
    for rel in expected_paths:
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_ROOT / rel, dst / rel)
    shutil.copytree(REPO_ROOT / "spec" / "golden", dst / "spec" / "golden")
    for rel, text in JUNK.items():
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        (dst / rel).write_text(text, encoding="utf-8")
    return dst


def _add_fake_adapter(repo: Path) -> None:
    adapter = repo / "adapter"
    adapter.mkdir()
    config = {"base_model_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct", "peft_type": "LORA", "r": 8}
    (adapter / "adapter_config.json").write_text(json.dumps(config), encoding="utf-8")
    header = json.dumps({"lora_A": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    (adapter / "adapter_model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    (adapter / "README.md").write_text("---\nlibrary_name: peft\n---\n# PPSF LoRA\n", encoding="utf-8")
    (adapter / "tools.json").write_text("[]\n", encoding="utf-8")  # the tool schemas it was trained on
    (adapter / "tools_shown.txt").write_text("routed\n", encoding="utf-8")  # shown only the routed tool
    # Shipping an adapter makes base_model mandatory in the card.
    from huggingface_hub import ModelCard

    card = ModelCard.load(repo / "README.md")
    card.data.base_model = "HuggingFaceTB/SmolLM2-135M-Instruct"
    card.save(repo / "README.md")


class FakeCommitInfo:
    def __init__(self, create_pr: bool):
        self.commit_url = COMMIT_URL
        self.pr_url = PR_URL if create_pr else None


class FakeApi:
    """Stands in for HfApi: records every call; optionally raises `error` from the first call."""

    def __init__(self, error: BaseException | None = None):
        self.error = error
        self.calls: list[tuple[str, tuple, dict]] = []

    def _record(self, name: str, args: tuple, kwargs: dict) -> None:
        self.calls.append((name, args, kwargs))
        if self.error is not None:
            raise self.error

    def create_repo(self, *args: Any, **kwargs: Any) -> str:
        self._record("create_repo", args, kwargs)
        return "https://huggingface.co/" + args[0]

    def create_branch(self, *args: Any, **kwargs: Any) -> None:
        self._record("create_branch", args, kwargs)

    def create_commit(self, *args: Any, **kwargs: Any) -> FakeCommitInfo:
        self._record("create_commit", args, kwargs)
        return FakeCommitInfo(bool(kwargs.get("create_pr")))

    def names(self) -> list[str]:
        return [name for name, _, _ in self.calls]

    def commit_kwargs(self) -> dict:
        (kwargs,) = [kw for name, _, kw in self.calls if name == "create_commit"]
        return kwargs


def _sent_paths(operations: list) -> dict[str, Any]:
    from huggingface_hub import CommitOperationAdd

    assert all(isinstance(op, CommitOperationAdd) for op in operations)
    return {op.path_in_repo: op for op in operations}


def _parse_listing(stdout: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in map(LINE.match, stdout.splitlines()) if m}


def _env(tmp_path: Path, token: str | None = SENTINEL) -> dict[str, str]:
    """A subprocess environment with no real credentials and no way to reach the Hub."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE_"))}
    env.update(
        HF_HUB_OFFLINE="1",
        HF_ENDPOINT="http://127.0.0.1:9",  # discard port: nothing listens, nothing is the Hub
        HF_HOME=str(tmp_path / "hf_home"),
        HF_TOKEN_PATH=str(tmp_path / "hf_home" / "no_token"),
        PYTHONIOENCODING="utf-8",
    )
    if token is not None:
        env["HF_TOKEN"] = token
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(UPLOAD_PY), *args],
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        cwd=REPO_ROOT,
    )


@pytest.fixture
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In-process: the sentinel is the only token huggingface_hub can find."""
    for key in [k for k in os.environ if k.startswith(("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HF_TOKEN", SENTINEL)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "hf_home" / "no_token"))


# ---------------------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------------------


def test_real_repo_validates(repo_dir: Path) -> None:
    assert upload.validate_repo(repo_dir) == []
    upload.ensure_valid(repo_dir)  # does not raise


def test_collect_files_is_exactly_the_allowlist(repo_dir: Path, expected_paths: set[str]) -> None:
    files, problems = upload.collect_files(repo_dir)
    assert problems == []
    assert {f.path_in_repo for f in files} == expected_paths
    assert "additional_chat_templates/train.jinja" in expected_paths


MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE = re.compile(r"^```.*?^```|`[^`\n]*`", re.M | re.S)


def markdown_links(text: str) -> list[str]:
    """The targets of the Markdown links and images in text, outside code blocks and code spans."""
    return MARKDOWN_LINK.findall(CODE.sub("", text))


def test_the_card_stays_short():
    assert len((REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200  # the rule for the card


def test_markdown_links_are_read_outside_code():
    text = '[a](docs/a.md) ![b](docs/b.png "title") `[c](c.md)`\n```\n[d](d.md)\n```\n[e](https://x.org/e#f)'
    assert markdown_links(text) == ["docs/a.md", "docs/b.png", "https://x.org/e#f"]


@pytest.mark.parametrize("page", ["README.md", *upload.CARD_DOCS])
def test_every_link_of_the_card_and_its_manual_works_on_github_and_on_the_hub(page):
    """A relative link works on both only when its file is in the repo and upload.py sends it with the card."""
    sent = {f.path_in_repo for f in upload.collect_files(REPO_ROOT)[0]}
    assert page in sent
    links = markdown_links((REPO_ROOT / page).read_text(encoding="utf-8"))
    assert links or page != "README.md"
    for target in links:
        if re.match(r"https?://", target):
            continue  # absolute: the same page wherever the card is read
        assert not target.startswith("/"), f"{page}: {target} is relative to the host's root, which differs"
        path = target.partition("#")[0]
        if path:  # not an anchor in the same page
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), path))
            assert resolved in sent, f"{page} links to {target}, which upload.py does not send with the card"


def _corrupt_template(repo: Path) -> None:
    path = repo / "chat_template.jinja"
    path.write_text(path.read_text(encoding="utf-8").replace("@PATIENT", "@USER"), encoding="utf-8")


def _embedded_differs(repo: Path) -> None:
    path = repo / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["chat_template"] += "{#- drift -#}"
    path.write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")


def _set_response_template(value: Any):
    def corrupt(repo: Path) -> None:
        path = repo / "tokenizer_config.json"
        config = json.loads(path.read_text(encoding="utf-8"))
        if value is None:
            del config["response_template"]
        else:
            config["response_template"] = value
        path.write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")

    return corrupt


def _break_tool_call_anchor(repo: Path) -> None:
    path = repo / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["response_template"]["fields"].pop("tool_calls")
    path.write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")


def _corrupt_named_template(repo: Path) -> None:
    path = repo / "additional_chat_templates" / "train.jinja"
    path.write_text(path.read_text(encoding="utf-8").replace("@SYSTEM", "@SYS"), encoding="utf-8")


def _remove(rel: str):
    def corrupt(repo: Path) -> None:
        (repo / rel).unlink()

    return corrupt


def _card_without_pipeline_tag(repo: Path) -> None:
    from huggingface_hub import ModelCard

    card = ModelCard.load(repo / "README.md")
    card.data.pipeline_tag = None
    card.save(repo / "README.md")


CORRUPTIONS = {
    "edited chat_template.jinja": (_corrupt_template, "chat_template.jinja renders golden"),
    "embedded copy differs": (_embedded_differs, "embedded in tokenizer_config.json differ"),
    "no response_template": (_set_response_template(None), "no response_template"),
    "invalid response_template": (_set_response_template({"version": 2}), "response_template cannot parse"),
    "tool calls not parsed": (_break_tool_call_anchor, "parses the sample tool call wrongly"),
    "edited named template": (
        _corrupt_named_template,
        "additional_chat_templates/train.jinja renders golden",
    ),
    "missing tokenizer.json": (_remove("tokenizer.json"), "required file tokenizer.json is missing"),
    "missing LICENSE": (_remove("LICENSE"), "required file LICENSE is missing"),
    "card lacks pipeline_tag": (_card_without_pipeline_tag, "lacks 'pipeline_tag'"),
    "no golden examples": (lambda repo: shutil.rmtree(repo / "spec"), "no golden examples"),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_validation_refuses_and_nothing_is_sent(
    case: str, repo_dir: Path, isolated_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    corrupt, fragment = CORRUPTIONS[case]
    corrupt(repo_dir)

    problems = upload.validate_repo(repo_dir)
    assert any(fragment in p for p in problems), problems

    api = FakeApi()
    assert upload.main(["--repo-id", "someone/ppsf", "--repo-dir", str(repo_dir)], api=api) == 1
    assert api.calls == []  # nothing sent, not even create_repo
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: validation failed") and "nothing was sent" in err and fragment in err
    assert "Traceback" not in err and SENTINEL not in out + err


def test_ensure_valid_raises_with_every_problem(repo_dir: Path) -> None:
    _remove("tokenizer.json")(repo_dir)
    _remove("LICENSE")(repo_dir)
    with pytest.raises(upload.ValidationError) as excinfo:
        upload.ensure_valid(repo_dir)
    assert excinfo.value.problems == upload.validate_repo(repo_dir)
    assert len(excinfo.value.problems) == 2
    assert "tokenizer.json" in str(excinfo.value) and "LICENSE" in str(excinfo.value)


def test_validation_loads_the_allowlisted_copy(repo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Were tokenizer.json left off the allowlist, users would not get it: validation must notice, even
    # though the file is right there in repo_dir.
    monkeypatch.setattr(upload, "ALLOWLIST_REQUIRED", tuple(n for n in REQUIRED if n != "tokenizer.json"))
    problems = upload.validate_repo(repo_dir)
    assert any("AutoTokenizer.from_pretrained cannot load" in p for p in problems), problems


def test_with_adapter_requires_the_folder(repo_dir: Path, isolated_env: None, capsys) -> None:
    problems = upload.validate_repo(repo_dir, with_adapter=True)
    assert any("--with-adapter" in p and "adapter" in p for p in problems), problems
    api = FakeApi()
    argv = ["--repo-id", "someone/ppsf", "--repo-dir", str(repo_dir), "--with-adapter"]
    assert upload.main(argv, api=api) == 1
    assert api.calls == []
    assert "does not exist" in capsys.readouterr().err


def test_with_adapter_requires_base_model_and_weights(repo_dir: Path) -> None:
    _add_fake_adapter(repo_dir)
    assert upload.validate_repo(repo_dir, with_adapter=True) == []
    (repo_dir / "adapter" / "adapter_model.safetensors").write_bytes(b"not safetensors")
    from huggingface_hub import ModelCard

    card = ModelCard.load(repo_dir / "README.md")
    card.data.base_model = None
    card.save(repo_dir / "README.md")
    problems = upload.validate_repo(repo_dir, with_adapter=True)
    assert any("base_model" in p for p in problems), problems
    assert any("adapter_model.safetensors is not a safetensors file" in p for p in problems), problems


# ---------------------------------------------------------------------------------------------------------
# Dry run
# ---------------------------------------------------------------------------------------------------------


def test_dry_run_subprocess_lists_exactly_the_allowlist(
    repo_dir: Path, tmp_path: Path, expected_paths: set[str]
) -> None:
    result = _run(["--repo-id", DRY_RUN_ID, "--dry-run", "--repo-dir", str(repo_dir)], _env(tmp_path, None))
    assert result.returncode == 0, result.stderr
    listing = _parse_listing(result.stdout)
    assert set(listing) == expected_paths
    assert listing == {rel: (repo_dir / rel).stat().st_size for rel in expected_paths}
    assert "Validation: OK" in result.stdout
    assert "Traceback" not in result.stderr


def test_dry_run_in_process_needs_no_token_and_no_network(
    repo_dir: Path, expected_paths: set[str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import huggingface_hub

    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("--dry-run must not call the Hub")

    for name in ("create_repo", "create_branch", "create_commit"):
        monkeypatch.setattr(huggingface_hub.HfApi, name, no_network)
    monkeypatch.setattr(huggingface_hub, "get_token", no_network)
    assert upload.main(["--repo-id", DRY_RUN_ID, "--dry-run", "--repo-dir", str(repo_dir)]) == 0
    out = capsys.readouterr().out
    assert set(_parse_listing(out)) == expected_paths
    assert f"Total: {len(expected_paths)} files" in out and "Validation: OK" in out


def test_dry_run_with_adapter_lists_adapter_files(repo_dir: Path, expected_paths: set[str], capsys) -> None:
    _add_fake_adapter(repo_dir)
    argv = ["--repo-id", DRY_RUN_ID, "--dry-run", "--with-adapter", "--repo-dir", str(repo_dir)]
    assert upload.main(argv) == 0
    assert set(_parse_listing(capsys.readouterr().out)) == expected_paths | set(ADAPTER_FILES)


def test_dry_run_reports_invalid_repo(repo_dir: Path, expected_paths: set[str], capsys) -> None:
    _corrupt_template(repo_dir)
    assert upload.main(["--repo-id", DRY_RUN_ID, "--dry-run", "--repo-dir", str(repo_dir)]) == 1
    out = capsys.readouterr().out
    assert set(_parse_listing(out)) == expected_paths
    assert "Validation: FAILED" in out and "chat_template.jinja renders golden" in out


# ---------------------------------------------------------------------------------------------------------
# The commit
# ---------------------------------------------------------------------------------------------------------


def test_commit_sends_exactly_the_allowlist(
    repo_dir: Path, expected_paths: set[str], isolated_env: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Through the real HfApi class, with only its network methods replaced."""
    from huggingface_hub import HfApi

    calls: list[tuple[str, tuple, dict]] = []

    def fake(name: str):
        def method(self: HfApi, *args: Any, **kwargs: Any) -> Any:
            assert self.token == SENTINEL  # the token reaches huggingface_hub, and only it
            calls.append((name, args, kwargs))
            return FakeCommitInfo(False) if name == "create_commit" else None

        return method

    for name in ("create_repo", "create_branch", "create_commit"):
        monkeypatch.setattr(HfApi, name, fake(name))

    assert upload.main(["--repo-id", "someone/ppsf", "--repo-dir", str(repo_dir)]) == 0
    assert [name for name, _, _ in calls] == ["create_repo", "create_commit"]
    _, args, kwargs = calls[0]
    assert args == ("someone/ppsf",)
    assert kwargs == {"private": None, "exist_ok": True, "repo_type": "model"}
    _, args, kwargs = calls[1]
    assert args == ("someone/ppsf",)
    sent = _sent_paths(kwargs["operations"])
    assert set(sent) == expected_paths
    for rel, op in sent.items():  # the bytes validated, read once, so a file swapped afterwards is not sent
        assert op.path_or_fileobj == (repo_dir / rel).read_bytes()
    assert kwargs["revision"] is None and kwargs["create_pr"] is False and kwargs["repo_type"] == "model"
    assert kwargs["commit_message"]
    out, err = capsys.readouterr()
    assert out.strip() == f"Commit: {COMMIT_URL}"
    assert SENTINEL not in out + err


def test_commit_with_adapter_pr_and_options(
    repo_dir: Path, expected_paths: set[str], isolated_env: None, capsys
) -> None:
    _add_fake_adapter(repo_dir)
    api = FakeApi()
    argv = [
        "--repo-id", "someone/ppsf", "--repo-dir", str(repo_dir), "--with-adapter", "--private",
        "--revision", "dev", "--create-pr", "--commit-message", "PPSF v1.1",
    ]  # fmt: skip
    assert upload.main(argv, api=api) == 0
    assert api.names() == ["create_repo", "create_commit"]  # a PR needs no branch of its own
    assert api.calls[0][2]["private"] is True
    kwargs = api.commit_kwargs()
    assert set(_sent_paths(kwargs["operations"])) == expected_paths | set(ADAPTER_FILES)
    assert (kwargs["revision"], kwargs["create_pr"], kwargs["commit_message"]) == ("dev", True, "PPSF v1.1")
    assert capsys.readouterr().out.strip() == f"Pull request: {PR_URL}"


def test_revision_branch_is_created_before_the_commit(repo_dir: Path, isolated_env: None) -> None:
    api = FakeApi()
    assert upload.main(["--repo-id", "someone/ppsf", "--repo-dir", str(repo_dir), "--revision", "dev"], api=api) == 0
    assert api.names() == ["create_repo", "create_branch", "create_commit"]
    assert api.calls[1][2] == {"branch": "dev", "exist_ok": True, "repo_type": "model"}
    assert api.commit_kwargs()["revision"] == "dev"


# ---------------------------------------------------------------------------------------------------------
# Errors and the token
# ---------------------------------------------------------------------------------------------------------


def _http_error(status: int, server_message: str) -> Exception:
    """A real huggingface_hub error, converted from a response by huggingface_hub itself."""
    import httpx2
    from huggingface_hub.utils import hf_raise_for_status

    request = httpx2.Request("POST", "https://huggingface.co/api/repos/create")
    response = httpx2.Response(status, request=request, json={"error": server_message})
    with pytest.raises(Exception) as excinfo:
        hf_raise_for_status(response)
    return excinfo.value


def _network_error() -> Exception:
    import httpx2

    return httpx2.ConnectError("[Errno 111] Connection refused")


def _offline_error() -> Exception:
    from huggingface_hub.errors import OfflineModeIsEnabled

    return OfflineModeIsEnabled("Cannot reach https://huggingface.co/api/repos/create: offline mode is enabled.")


HUB_ERRORS = {
    "401": (lambda: _http_error(401, f"Invalid credentials in Authorization header {SENTINEL}"), "HTTP 401"),
    "403": (
        lambda: _http_error(403, "You don't have the rights to create a model under this namespace"),
        "HTTP 403",
    ),
    "network": (_network_error, "cannot reach the Hugging Face Hub (network error: ConnectError)"),
    "offline": (_offline_error, "offline mode is enabled"),
    "500": (lambda: _http_error(500, f"internal error {SENTINEL}"), "HTTP 500"),
}


@pytest.mark.parametrize("case", list(HUB_ERRORS))
def test_hub_errors_are_one_line_and_token_free(
    case: str, repo_dir: Path, isolated_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    make_error, fragment = HUB_ERRORS[case]
    error = make_error()
    if case in {"401", "403", "500"}:
        from huggingface_hub.errors import HfHubHTTPError

        assert isinstance(error, HfHubHTTPError) and error.response.status_code == int(case)
    api = FakeApi(error=error)
    assert upload.main(["--repo-id", "someone/ppsf", "--repo-dir", str(repo_dir)], api=api) == 1
    assert api.names() == ["create_repo"]
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: ") and fragment in err and "Traceback" not in err
    assert SENTINEL not in out + err
    if case == "401":
        assert "hf auth login" in err


@pytest.mark.parametrize(
    ("args", "token", "fragment"),
    [
        (["--repo-id", "someone/ppsf"], None, "hf auth login"),
        (["--repo-id", "not/a/valid/id"], SENTINEL, "invalid repo id"),
        (["--repo-id", "someone/bad..name"], SENTINEL, "invalid repo id"),
        (["--repo-id", "no-owner"], SENTINEL, "invalid repo id"),
        (["--repo-id", "someone/ppsf"], SENTINEL, "offline mode is enabled"),  # the real huggingface_hub path
        (["--repo-id", "someone/ppsf", "--with-adapter"], SENTINEL, "validation failed"),
    ],
    ids=["no-token", "too-many-slashes", "double-dot", "no-owner", "offline", "adapter-missing"],
)
def test_cli_errors_subprocess(
    args: list[str], token: str | None, fragment: str, repo_dir: Path, tmp_path: Path
) -> None:
    result = _run([*args, "--repo-dir", str(repo_dir)], _env(tmp_path, token))
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.stderr
    assert SENTINEL not in result.stdout + result.stderr
    if token is None:
        assert "HF_TOKEN" in lines[0]


def test_token_is_never_written(repo_dir: Path, tmp_path: Path, isolated_env: None) -> None:
    assert upload.main(["--repo-id", "someone/ppsf", "--repo-dir", str(repo_dir)], api=FakeApi()) == 0
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path


def test_help_explains_every_option(tmp_path: Path) -> None:
    result = _run(["--help"], _env(tmp_path))
    assert result.returncode == 0
    for option in ("--repo-id", "--private", "--revision", "--create-pr", "--commit-message", "--dry-run",
                   "--with-adapter", "--repo-dir"):  # fmt: skip
        assert option in result.stdout


# ---------------------------------------------------------------------------------------------------------
# Model card metadata
# ---------------------------------------------------------------------------------------------------------

MINIMAL_FRONT_MATTER = (
    "---\nlicense: mit\nlanguage:\n- tr\n- en\nlibrary_name: transformers\ntags:\n- chat-template\n"
    "pipeline_tag: text-generation\n---\n"
)


def _card_problems(readme: Path, *, adapter: bool) -> list[str]:
    from huggingface_hub import ModelCard, ModelCardData

    card = ModelCard.load(readme)  # a Path: read from disk, never from the Hub
    assert isinstance(card.data, ModelCardData)
    data = card.data.to_dict()
    problems = [key for key in ("license", "language", "library_name", "tags", "pipeline_tag") if not data.get(key)]
    languages = [data["language"]] if isinstance(data.get("language"), str) else data.get("language") or []
    problems += [f"language {lang}" for lang in ("tr", "en") if lang not in languages]
    if adapter and not data.get("base_model"):
        problems.append("base_model")
    return problems


def test_real_readme_front_matter() -> None:
    readme = REPO_ROOT / "README.md"
    assert readme.is_file(), "README.md (the Hub model card) is missing"
    adapter = (REPO_ROOT / "adapter").is_dir()
    assert _card_problems(readme, adapter=adapter) == []
    assert upload._check_card(readme, require_base_model=adapter) == []


def test_card_check_on_minimal_front_matter(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(MINIMAL_FRONT_MATTER + "# PPSF\n", encoding="utf-8")
    assert _card_problems(readme, adapter=False) == []
    assert upload._check_card(readme, require_base_model=False) == []
    assert _card_problems(readme, adapter=True) == ["base_model"]
    assert any("base_model" in p for p in upload._check_card(readme, require_base_model=True))

    readme.write_text(MINIMAL_FRONT_MATTER.replace("- en\n", ""), encoding="utf-8")
    assert upload._check_card(readme, require_base_model=False) == ["README.md front matter 'language' lacks ['en']"]
    readme.write_text("# no front matter\n", encoding="utf-8")
    assert len(upload._check_card(readme, require_base_model=False)) == 5


# ---------------------------------------------------------------------------------------------------------
# Hostile repos: nothing outside the repo, through a link or of an odd name is listed or sent
# ---------------------------------------------------------------------------------------------------------


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "token.txt"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("hf_SECRETSECRETSECRET\n", encoding="utf-8")
    return secret


def _link_file(rel: str):
    def apply(repo: Path, secret: Path) -> None:
        (repo / rel).unlink(missing_ok=True)
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).symlink_to(secret)

    return apply


def _link_adapter_folder(repo: Path, secret: Path) -> None:
    outside = secret.parent / "adapter"
    _add_fake_adapter(repo)
    shutil.move(repo / "adapter", outside)
    (repo / "adapter").symlink_to(outside, target_is_directory=True)


@pytest.mark.parametrize(
    "make_link, with_adapter, rel",
    [
        (_link_file("LICENSE"), False, "LICENSE"),
        (_link_file("README.md"), False, "README.md"),
        (_link_file("additional_chat_templates/leak.jinja"), False, "additional_chat_templates/leak.jinja"),
        (_link_file("adapter/README.md"), True, "adapter/README.md"),
        (_link_adapter_folder, True, "adapter"),
    ],
    ids=["LICENSE", "README", "template", "adapter-file", "adapter-folder"],
)
def test_symlinks_out_of_the_repo_are_refused_and_never_sent(
    repo_dir: Path, tmp_path: Path, make_link, with_adapter: bool, rel: str, isolated_env: None, capsys
) -> None:
    """A link to a token file (or /etc/passwd) used to be listed with "Validation: OK" and committed."""
    if with_adapter and rel != "adapter":
        _add_fake_adapter(repo_dir)
    make_link(repo_dir, _secret(tmp_path))
    argv = ["--repo-id", DRY_RUN_ID, "--dry-run", "--repo-dir", str(repo_dir)] + (
        ["--with-adapter"] if with_adapter else []
    )
    assert upload.main(argv) == 1
    out = capsys.readouterr().out
    assert f"{rel} is a symbolic link" in out and "Validation: FAILED" in out
    assert not any(path == rel or path.startswith(rel + "/") for path in _parse_listing(out))
    files, problems = upload.collect_files(repo_dir, with_adapter=with_adapter)
    assert all(not f.local_path.is_symlink() and "outside" not in str(f.local_path.resolve()) for f in files)
    with pytest.raises(upload.ValidationError, match="symbolic link"):
        upload.upload(repo_dir, "someone/ppsf", token=SENTINEL, with_adapter=with_adapter, api=object())


def test_template_names_with_newlines_cannot_forge_listing_lines(repo_dir: Path, capsys) -> None:
    """A file named "x\\n  LICENSE  1 bytes\\n.jinja" used to add fake lines to the dry-run listing."""
    odd = repo_dir / "additional_chat_templates" / "x\n  fake.json  1 bytes\ny.jinja"
    odd.write_text("{{ 'x' }}", encoding="utf-8")
    assert upload.main(["--repo-id", DRY_RUN_ID, "--dry-run", "--repo-dir", str(repo_dir)]) == 1
    out = capsys.readouterr().out
    assert "fake.json" not in _parse_listing(out)
    assert "a template file name may hold only letters" in out
    assert not any("\n" in f.path_in_repo for f in upload.collect_files(repo_dir)[0])


def test_files_over_the_size_limit_are_refused(repo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upload, "MAX_FILE_BYTES", 1000)
    files, problems = upload.collect_files(repo_dir)
    assert any("tokenizer.json is" in p and "over the 1,000-byte limit" in p for p in problems)
    assert "tokenizer.json" not in {f.path_in_repo for f in files}


def test_a_file_swapped_for_a_link_after_validation_is_not_read(repo_dir: Path, tmp_path: Path) -> None:
    license_path = repo_dir / "LICENSE"
    assert upload.read_regular(license_path) == license_path.read_bytes()
    license_path.unlink()
    license_path.symlink_to(_secret(tmp_path))
    with pytest.raises(OSError):
        upload.read_regular(license_path)


# ---------------------------------------------------------------------------------------------------------
# The Space (--space): the browser chat with the package and the adapter
# ---------------------------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout


def _space_expected() -> set[str]:
    """The tracked files of the package patterns (git, not the folder: an untracked file is never sent)."""
    tracked = set(_git(REPO_ROOT, "ls-files", "-z").split("\0"))
    package = {
        p.relative_to(REPO_ROOT).as_posix()
        for pattern in upload.SPACE_PACKAGE
        for p in REPO_ROOT.glob(pattern)
        if p.relative_to(REPO_ROOT).as_posix() in tracked
    }
    adapter = {f"adapter/{n}" for n in upload.SPACE_ADAPTER}
    return {"app.py", "README.md", "requirements.txt"} | package | adapter


def test_space_dry_run_lists_exactly_the_space_files(capsys) -> None:
    assert upload.main(["--repo-id", "someone/ppsf-chat", "--space", "--dry-run", "--repo-dir", str(REPO_ROOT)]) == 0
    out = capsys.readouterr().out
    assert set(_parse_listing(out)) == _space_expected() and "Validation: OK" in out
    assert not any(p.startswith(("tests/", "training/", "eval/", ".venv")) for p in _parse_listing(out))


def test_space_requirements_come_from_pyproject() -> None:
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = upload.space_requirements(REPO_ROOT).decode().split("\n")
    assert lines[:-1] == [*project["dependencies"], *project["optional-dependencies"]["app"]]


def _space_copy(tmp_path: Path) -> Path:
    """The Space's files of this repo in a real git repository of their own, every one of them tracked."""
    dst = tmp_path / "space-repo"
    for rel in _space_expected() - {"README.md", "requirements.txt"} | {upload.SPACE_README, "pyproject.toml"}:
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_ROOT / rel, dst / rel)
    _git(dst, "init", "-q")
    _git(dst, "add", "-A")
    return dst


def test_space_sends_only_the_files_git_tracks(tmp_path: Path, capsys) -> None:
    """An untracked .py holding a token, a patient's JSON and a dot-folder used to be listed and sent."""
    repo = _space_copy(tmp_path)
    untracked = {
        "agent/my_token.py": 'HF_TOKEN = "hf_untrackedSECRET"\n',
        "agent/pharmacy/data/patient_ayse.json": '{"name": "Ayşe", "phone": "555 0101"}\n',
        "agent/.scratch/notes.py": "# a dot-folder of drafts\n",
        "agent/engine/.hidden.py": "x = 1\n",
    }
    for rel, text in untracked.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    files, problems = upload.collect_space_files(repo)
    assert problems == [] and {f.path_in_repo for f in files} == _space_expected()
    assert upload.main(["--repo-id", "someone/ppsf-chat", "--space", "--dry-run", "--repo-dir", str(repo)]) == 0
    out = capsys.readouterr().out
    assert set(_parse_listing(out)) == _space_expected() and "Validation: OK" in out
    assert not any(rel in out for rel in untracked) and "hf_untrackedSECRET" not in out
    # A dot-folder is never sent, even tracked; a file the Space needs that git does not track is a problem.
    _git(repo, "add", "-f", "agent/.scratch/notes.py")
    _git(repo, "rm", "-q", "--cached", "app.py")
    files, problems = upload.collect_space_files(repo)
    assert "agent/.scratch/notes.py" not in {f.path_in_repo for f in files} and "app.py" not in {
        f.path_in_repo for f in files
    }
    assert any("app.py is not tracked by git" in p for p in problems)


def test_space_refuses_a_folder_that_is_not_a_git_checkout(tmp_path: Path, capsys) -> None:
    repo = _space_copy(tmp_path)
    shutil.rmtree(repo / ".git")
    files, problems = upload.collect_space_files(repo)
    assert [f.path_in_repo for f in files if f.local_path is not None] == []
    assert any("not a git work tree" in p and "only files git tracks" in p for p in problems)
    assert upload.main(["--repo-id", "someone/ppsf-chat", "--space", "--dry-run", "--repo-dir", str(repo)]) == 1
    assert "not a git work tree" in capsys.readouterr().out


def test_space_validation_refuses_links_and_a_card_spaces_cannot_run(tmp_path: Path) -> None:
    repo = _space_copy(tmp_path)
    assert upload.validate_space(repo) == []
    (repo / "app.py").unlink()
    (repo / "app.py").symlink_to(_secret(tmp_path))
    card = (repo / upload.SPACE_README).read_text(encoding="utf-8")
    (repo / upload.SPACE_README).write_text(card.replace("sdk_version: 6.31.0", "sdk_version: 5.0.0"), encoding="utf-8")
    problems = upload.validate_space(repo)
    assert any("app.py is a symbolic link" in p for p in problems)
    assert any("sdk_version 5.0.0 is not in gradio" in p for p in problems)
    assert all(f.path_in_repo != "app.py" for f in upload.collect_space_files(repo)[0])


def test_space_upload_sends_the_listed_files_to_a_gradio_space(tmp_path: Path) -> None:
    calls: dict[str, Any] = {}

    class Api:
        def create_repo(self, repo_id, **kwargs):
            calls["repo"] = (repo_id, kwargs)

        def create_commit(self, repo_id, operations, **kwargs):
            calls["commit"] = (repo_id, {op.path_in_repo for op in operations}, kwargs)
            return FakeCommitInfo(False)

    upload.upload_space(_space_copy(tmp_path), "someone/ppsf-chat", token=SENTINEL, api=Api())
    assert calls["repo"] == ("someone/ppsf-chat", {"repo_type": "space", "space_sdk": "gradio", "private": None,
                                                   "exist_ok": True})  # fmt: skip
    assert calls["commit"][1] == _space_expected() and calls["commit"][2]["repo_type"] == "space"


# ---------------------------------------------------------------------------------------------------------
# Hard links: a second name of any file of the machine (a token file, another user's data), in every mode
# ---------------------------------------------------------------------------------------------------------


def _hard_link(path: Path, secret: Path) -> None:
    path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.link(secret, path)


def _model_folder(tmp_path: Path) -> Path:
    """The files `python -m agent.export` writes, as plain files (collecting them reads no weights)."""
    folder = tmp_path / "model"
    for name in (*upload.MODEL_REQUIRED, "tools.json", "additional_chat_templates/train.jinja", "gguf/m-q8_0.gguf"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"x")
    return folder


@pytest.mark.parametrize(
    ("mode", "rel"),
    [
        ("tokenizer", "LICENSE"),
        ("tokenizer", "additional_chat_templates/leak.jinja"),
        ("adapter", "adapter/README.md"),
        ("space", "app.py"),
        ("model", "config.json"),
        ("model", "gguf/m-q8_0.gguf"),
    ],
)
def test_hard_links_are_refused_in_every_mode(
    repo_dir: Path, tmp_path: Path, mode: str, rel: str, isolated_env: None, capsys
) -> None:
    """A hard link to a token file used to be read as an ordinary file of the repo, listed and sent."""
    secret = _secret(tmp_path)
    argv = ["--repo-id", DRY_RUN_ID, "--dry-run"]
    if mode in ("tokenizer", "adapter"):
        folder = repo_dir
        if mode == "adapter":
            _add_fake_adapter(repo_dir)
            argv.append("--with-adapter")
        argv += ["--repo-dir", str(folder)]
        collect = lambda: upload.collect_files(folder, with_adapter=mode == "adapter")  # noqa: E731
    elif mode == "space":
        folder = _space_copy(tmp_path)
        argv += ["--space", "--repo-dir", str(folder)]
        collect = lambda: upload.collect_space_files(folder)  # noqa: E731
    else:
        folder = _model_folder(tmp_path)
        argv += ["--model", str(folder)]
        collect = lambda: upload.collect_model_files(folder)  # noqa: E731
    _hard_link(folder / rel, secret)
    if mode == "space":
        _git(folder, "add", rel)
    files, problems = collect()
    assert rel not in {f.path_in_repo for f in files}
    assert any(p.startswith(f"{rel} has 2 hard links") for p in problems), problems
    assert upload.main(argv) == 1
    out = capsys.readouterr().out
    assert f"{rel} has 2 hard links" in out and "Validation: FAILED" in out and rel not in _parse_listing(out)


def test_symbolic_links_are_refused_by_upload_model(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path)
    (folder / "tools.json").unlink()
    (folder / "tools.json").symlink_to(_secret(tmp_path))
    files, problems = upload.collect_model_files(folder)
    assert any(p.startswith("tools.json is a symbolic link") for p in problems)
    assert "tools.json" not in {f.path_in_repo for f in files}


def test_a_file_hard_linked_after_validation_is_not_read(repo_dir: Path, tmp_path: Path) -> None:
    license_path = repo_dir / "LICENSE"
    _hard_link(license_path, _secret(tmp_path))
    with pytest.raises(upload.ValidationError, match="hard link"):
        upload.read_regular(license_path)
