#!/usr/bin/env python
"""Validate the PPSF tokenizer repo and push it to the Hugging Face Hub in a single commit.

Only an explicit allowlist of files is ever sent (see `ALLOWLIST_REQUIRED` and friends). Before anything is
sent, the allowlisted files are copied to a temporary folder and loaded from there with
`AutoTokenizer.from_pretrained`, exactly as a user downloading the repo would receive them; the golden
examples in `spec/golden/*.json` must render byte-exact, the standalone and embedded chat templates must be
identical, every named template must render the golden examples identically, and the `response_template`
must parse a tool call and a plain answer. Any problem stops the upload: nothing is sent.

Examples:

    python upload.py --repo-id OWNER/NAME --dry-run
    python upload.py --repo-id OWNER/NAME --private
    python upload.py --repo-id OWNER/NAME --revision dev --create-pr --with-adapter

The token comes from `HF_TOKEN` or from `hf auth login`; it is never printed, logged or written.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import stat
import struct
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Files sent from the repo root. Everything else (.env, caches, venvs, tests, spec, scripts...) stays local.
ALLOWLIST_REQUIRED: tuple[str, ...] = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "README.md",
    "LICENSE",
)
ALLOWLIST_OPTIONAL: tuple[str, ...] = ("special_tokens_map.json",)
NAMED_TEMPLATES_DIR = "additional_chat_templates"
ADAPTER_DIR = "adapter"
ADAPTER_REQUIRED: tuple[str, ...] = ("adapter_config.json", "adapter_model.safetensors")
ADAPTER_OPTIONAL: tuple[str, ...] = ("README.md",)
GOLDEN_DIR = Path("spec") / "golden"
# The largest file the repo ships is the LoRA adapter (~10 MB); anything far bigger is not meant to go.
MAX_FILE_BYTES = 64 * 1024 * 1024
TEMPLATE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.jinja")

DEFAULT_COMMIT_MESSAGE = "Upload PPSF tokenizer and chat templates"
LOGIN_HINT = "run `hf auth login` or set the HF_TOKEN environment variable"

# Sample generations for the response_template check (the prompt is a golden conversation rendered with
# add_generation_prompt=False, so it ends with the blank line after the last block).
SAMPLE_TOOL_CALL = '@TOOL_CALL\n{\n  "name": "search_drug",\n  "arguments": {"drug": "Parol"}\n}'
EXPECTED_TOOL_CALLS = [{"type": "function", "function": {"name": "search_drug", "arguments": {"drug": "Parol"}}}]
SAMPLE_ANSWER = "@PHARMACIST\nParol bir ağrı kesicidir."
EXPECTED_CONTENT = "Parol bir ağrı kesicidir."

# Model card metadata the Hub card must carry.
CARD_REQUIRED_KEYS: tuple[str, ...] = ("license", "language", "library_name", "tags", "pipeline_tag")
CARD_REQUIRED_LANGUAGES: tuple[str, ...] = ("tr", "en")


class ValidationError(Exception):
    """The repo is not fit to upload. `problems` lists every problem found (one line each)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__(f"validation failed ({len(self.problems)} problem(s)): " + "; ".join(self.problems))


class UploadError(Exception):
    """A user-facing error: its message is printed as one line and the script exits non-zero."""


@dataclass(frozen=True)
class RepoFile:
    """One file to send: where it lies locally and where it goes in the Hub repo."""

    path_in_repo: str
    local_path: Path

    @property
    def size(self) -> int:
        return self.local_path.stat().st_size


# ---------------------------------------------------------------------------------------------------------
# Collecting the allowlist
# ---------------------------------------------------------------------------------------------------------


def collect_files(repo_dir: str | Path, *, with_adapter: bool = False) -> tuple[list[RepoFile], list[str]]:
    """Return the allowlisted files present in `repo_dir` and the problems (missing or unsafe files).

    Only these paths are ever considered: `ALLOWLIST_REQUIRED`, `ALLOWLIST_OPTIONAL`,
    `additional_chat_templates/*.jinja` and, with `with_adapter`, the files of `adapter/`. Each must be a
    regular file inside the repo, reached through no symbolic link (a link could send `/etc/passwd` or a
    token file), no larger than `MAX_FILE_BYTES`; a named template's file name must be a plain name.
    """
    root = Path(repo_dir).resolve()
    files: list[RepoFile] = []
    problems: list[str] = []

    def add(path_in_repo: str, required: bool) -> None:
        local = root / path_in_repo
        problem = _unsafe(root, path_in_repo)
        if problem is not None:
            problems.append(problem)
        elif local.is_file():
            files.append(RepoFile(path_in_repo, local))
        elif required:
            problems.append(f"required file {path_in_repo} is missing from {root}")

    for name in ALLOWLIST_REQUIRED:
        add(name, required=True)
    for name in ALLOWLIST_OPTIONAL:
        add(name, required=False)
    templates_dir = root / NAMED_TEMPLATES_DIR
    if (problem := _unsafe(root, NAMED_TEMPLATES_DIR)) is not None:
        problems.append(problem)
    elif templates_dir.is_dir():
        for template in sorted(templates_dir.glob("*.jinja")):
            if template.name.startswith("."):
                continue
            if not TEMPLATE_NAME.fullmatch(template.name):
                problems.append(
                    f"{NAMED_TEMPLATES_DIR}/{ascii(template.name)[1:-1]}: a template file name may hold only "
                    "letters, digits, '.', '_' and '-' (it becomes the template's name on the Hub)"
                )
                continue
            add(f"{NAMED_TEMPLATES_DIR}/{template.name}", required=False)
    if with_adapter:
        if (problem := _unsafe(root, ADAPTER_DIR)) is not None:
            problems.append(problem)
        elif not (root / ADAPTER_DIR).is_dir():
            problems.append(f"--with-adapter was given but the folder {root / ADAPTER_DIR} does not exist")
        else:
            for name in ADAPTER_REQUIRED:
                add(f"{ADAPTER_DIR}/{name}", required=True)
            for name in ADAPTER_OPTIONAL:
                add(f"{ADAPTER_DIR}/{name}", required=False)
    return files, problems


def _unsafe(root: Path, path_in_repo: str) -> str | None:
    """Why root/path_in_repo must not be sent (a link on the way, outside the repo, not a file, too big), or None."""
    local = root
    for part in Path(path_in_repo).parts:
        local = local / part
        if local.is_symlink():
            return (
                f"{local.relative_to(root)} is a symbolic link (to {os.readlink(local)}): only regular files "
                "inside the repo are sent; replace it with the file itself"
            )
    if not local.exists():
        return None
    if not local.resolve().is_relative_to(root):
        return f"{path_in_repo} resolves outside the repo ({local.resolve()})"
    if local.is_dir() and path_in_repo in (NAMED_TEMPLATES_DIR, ADAPTER_DIR):
        return None
    if not stat.S_ISREG(local.stat().st_mode):
        return f"{path_in_repo} is not a regular file"
    size = local.stat().st_size
    if size > MAX_FILE_BYTES:
        return f"{path_in_repo} is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit of a file this repo sends"
    return None


def read_regular(path: Path) -> bytes:
    """The bytes of path, refusing a symbolic link or non-file swapped in after validation (O_NOFOLLOW)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            raise ValidationError([f"{path} changed after validation: not a regular file within the size limit"])
        return handle.read(MAX_FILE_BYTES + 1)


# ---------------------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------------------


def validate_repo(
    repo_dir: str | Path, *, with_adapter: bool = False, golden_dir: str | Path | None = None
) -> list[str]:
    """Check the repo as a user would receive it; return the list of problems (empty when valid).

    Args:
        repo_dir: the tokenizer repo folder (the folder this script lives in, normally).
        with_adapter: also check `adapter/` and require `base_model` in the card metadata.
        golden_dir: folder of golden `*.json` examples; defaults to `repo_dir/spec/golden`.
    """
    root = Path(repo_dir)
    files, problems = collect_files(root, with_adapter=with_adapter)
    if problems:
        return problems  # nothing below makes sense without the required files
    golden = _load_golden(Path(golden_dir) if golden_dir is not None else root / GOLDEN_DIR, problems)

    config = _read_json(root / "tokenizer_config.json", problems)
    if config is not None:
        problems += _check_embedded_template(config, (root / "chat_template.jinja").read_text(encoding="utf-8"))
    problems += _check_card(root / "README.md", require_base_model=with_adapter)
    if with_adapter:
        problems += _check_adapter(root / ADAPTER_DIR)

    with tempfile.TemporaryDirectory(prefix="ppsf-upload-") as tmp:
        for repo_file in files:
            if repo_file.path_in_repo.startswith(f"{ADAPTER_DIR}/"):
                continue  # AutoTokenizer never reads the adapter; no need to copy weights around
            target = Path(tmp, repo_file.path_in_repo)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(repo_file.local_path, target)
        tokenizer = _load_tokenizer(tmp, problems)
        if tokenizer is not None:
            problems += _check_golden_renders(tokenizer, golden, files)
            problems += _check_response_template(tokenizer, golden)
    return problems


def ensure_valid(repo_dir: str | Path, *, with_adapter: bool = False, golden_dir: str | Path | None = None) -> None:
    """Like `validate_repo`, but raise `ValidationError` listing every problem."""
    problems = validate_repo(repo_dir, with_adapter=with_adapter, golden_dir=golden_dir)
    if problems:
        raise ValidationError(problems)


def _read_json(path: Path, problems: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        problems.append(f"{path.name} is not valid JSON: {_one_line(err)}")
        return None


def _load_golden(golden_dir: Path, problems: list[str]) -> list[tuple[str, dict[str, Any]]]:
    paths = sorted(golden_dir.glob("*.json")) if golden_dir.is_dir() else []
    if not paths:
        problems.append(f"no golden examples (*.json) found in {golden_dir}")
        return []
    golden = []
    for path in paths:
        example = _read_json(path, problems)
        if example is None:
            continue
        if not isinstance(example, dict) or not {"messages", "expected"} <= set(example):
            problems.append(f"golden example {path.name} must be an object with 'messages' and 'expected'")
            continue
        golden.append((path.name, example))
    return golden


def _check_embedded_template(config: dict[str, Any], standalone: str) -> list[str]:
    embedded = config.get("chat_template")
    if isinstance(embedded, list):  # the multi-template form: [{"name": ..., "template": ...}, ...]
        embedded = next((t.get("template") for t in embedded if t.get("name") == "default"), None)
    if not isinstance(embedded, str):
        return ["tokenizer_config.json has no embedded chat_template string"]
    if embedded != standalone:
        return [
            "chat_template.jinja and the chat_template embedded in tokenizer_config.json differ "
            + _first_difference(standalone, embedded)
        ]
    return []


def _check_card(readme: Path, *, require_base_model: bool) -> list[str]:
    from huggingface_hub import ModelCard

    try:
        data = ModelCard.load(readme).data.to_dict()  # a Path: never looked up on the Hub
    except Exception as err:  # YAML errors come in several types
        return [f"README.md front matter cannot be parsed: {_one_line(err)}"]
    problems = [f"README.md front matter lacks '{key}'" for key in CARD_REQUIRED_KEYS if not data.get(key)]
    language = data.get("language") or []
    languages = [language] if isinstance(language, str) else list(language)
    missing = [lang for lang in CARD_REQUIRED_LANGUAGES if lang not in languages]
    if data.get("language") and missing:
        problems.append(f"README.md front matter 'language' lacks {missing}")
    if require_base_model and not data.get("base_model"):
        problems.append("README.md front matter lacks 'base_model' (required when the adapter is uploaded)")
    return problems


def _check_adapter(adapter_dir: Path) -> list[str]:
    problems: list[str] = []
    config = _read_json(adapter_dir / "adapter_config.json", problems)
    if config is not None and not isinstance(config, dict):
        problems.append("adapter/adapter_config.json must be a JSON object")
    weights = adapter_dir / "adapter_model.safetensors"
    try:
        with weights.open("rb") as handle:
            (header_len,) = struct.unpack("<Q", handle.read(8))
            if header_len > min(weights.stat().st_size - 8, 100_000_000):
                raise ValueError(f"header length {header_len} does not fit the file")
            header = json.loads(handle.read(header_len))
            if not isinstance(header, dict):
                raise ValueError("the header is not a JSON object")
    except (OSError, struct.error, ValueError) as err:
        problems.append(f"adapter/adapter_model.safetensors is not a safetensors file: {_one_line(err)}")
    return problems


def _load_tokenizer(folder: str, problems: list[str]) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as err:  # transformers raises many types here
        problems.append(f"AutoTokenizer.from_pretrained cannot load the allowlisted files: {_one_line(err)}")
        return None


def _render(tokenizer: Any, example: dict[str, Any], *, add_generation_prompt: bool, template: str | None) -> str:
    return tokenizer.apply_chat_template(
        example["messages"],
        tools=example.get("tools"),
        add_generation_prompt=add_generation_prompt,
        tokenize=False,
        chat_template=template,
    )


def _check_golden_renders(tokenizer: Any, golden: list[tuple[str, dict[str, Any]]], files: list[RepoFile]) -> list[str]:
    named = [
        f.path_in_repo.removeprefix(f"{NAMED_TEMPLATES_DIR}/").removesuffix(".jinja")
        for f in files
        if f.path_in_repo.startswith(f"{NAMED_TEMPLATES_DIR}/")
    ]
    problems = []
    for template, label in [(None, "chat_template.jinja")] + [(n, f"{NAMED_TEMPLATES_DIR}/{n}.jinja") for n in named]:
        for name, example in golden:
            try:
                rendered = _render(
                    tokenizer,
                    example,
                    add_generation_prompt=bool(example.get("add_generation_prompt", False)),
                    template=template,
                )
            except Exception as err:  # jinja2 and transformers errors alike
                problems.append(f"{label} fails to render golden {name}: {_one_line(err)}")
                continue
            if rendered != example["expected"]:
                problems.append(
                    f"{label} renders golden {name} differently " + _first_difference(example["expected"], rendered)
                )
    return problems


def _check_response_template(tokenizer: Any, golden: list[tuple[str, dict[str, Any]]]) -> list[str]:
    if getattr(tokenizer, "response_template", None) is None:
        return ["tokenizer_config.json has no response_template (needed by tokenizer.parse_response)"]
    if not golden:
        return []
    name, example = golden[0]
    try:
        prompt = _render(tokenizer, example, add_generation_prompt=False, template=None)
    except Exception as err:
        return [f"cannot render the sample prompt from golden {name}: {_one_line(err)}"]
    problems = []
    cases = [
        ("tool call", SAMPLE_TOOL_CALL, "tool_calls", EXPECTED_TOOL_CALLS),
        ("plain answer", SAMPLE_ANSWER, "content", EXPECTED_CONTENT),
    ]
    for label, generated, key, expected in cases:
        try:
            parsed = tokenizer.parse_response(generated, prefix=prompt)
        except Exception as err:  # the parser raises ValueError/KeyError on bad templates
            problems.append(f"response_template cannot parse the sample {label}: {_one_line(err)}")
            continue
        got = parsed.get(key) if isinstance(parsed, dict) else None
        if got != expected:
            problems.append(
                f"response_template parses the sample {label} wrongly: {key} is {got!r}, expected {expected!r}"
            )
    return problems


def _first_difference(expected: str, got: str) -> str:
    index = next(
        (i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b),
        min(len(expected), len(got)),
    )
    return (
        f"(first difference at character {index}: expected {expected[index : index + 40]!r}, "
        f"got {got[index : index + 40]!r})"
    )


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= 300 else text[:297] + "..."


# ---------------------------------------------------------------------------------------------------------
# Upload
# ---------------------------------------------------------------------------------------------------------


def check_repo_id(repo_id: str) -> None:
    """Raise `UploadError` unless `repo_id` is a valid `OWNER/NAME` Hub repo id."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise UploadError(f"invalid repo id {repo_id!r}: {_one_line(err)}") from None
    if repo_id.count("/") != 1:
        raise UploadError(f"invalid repo id {repo_id!r}: expected OWNER/NAME")


def resolve_token() -> str:
    """Return the Hub token from HF_TOKEN or the `hf auth login` store; raise `UploadError` if none."""
    from huggingface_hub import get_token

    try:
        token = get_token()
    except Exception as err:  # OIDC exchange or OAuth refresh failures
        raise UploadError(f"could not obtain a Hugging Face token ({type(err).__name__}); {LOGIN_HINT}") from None
    if not token:
        raise UploadError(f"no Hugging Face token found: {LOGIN_HINT}")
    return token


def upload(
    repo_dir: str | Path,
    repo_id: str,
    *,
    token: str,
    private: bool = False,
    revision: str | None = None,
    create_pr: bool = False,
    commit_message: str | None = None,
    with_adapter: bool = False,
    api: Any = None,
) -> str:
    """Validate `repo_dir`, then send the allowlisted files to `repo_id` in one commit.

    Returns the commit URL (the PR URL with `create_pr`). Raises `ValidationError` before anything is sent if
    the repo is not valid, and `UploadError` (with a one-line, token-free message) on Hub errors.
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    check_repo_id(repo_id)
    ensure_valid(repo_dir, with_adapter=with_adapter)
    files, problems = collect_files(repo_dir, with_adapter=with_adapter)
    if problems:  # files vanished between validation and now
        raise ValidationError(problems)
    if api is None:
        api = HfApi(token=token, library_name="ppsf-upload")
    operations = [
        CommitOperationAdd(path_in_repo=f.path_in_repo, path_or_fileobj=read_regular(f.local_path)) for f in files
    ]
    message = commit_message or (DEFAULT_COMMIT_MESSAGE + (" and LoRA adapter" if with_adapter else ""))

    with _hub_errors(repo_id, token):
        api.create_repo(repo_id, private=True if private else None, exist_ok=True, repo_type="model")
        if revision is not None and not create_pr:
            api.create_branch(repo_id, branch=revision, exist_ok=True, repo_type="model")
        info = api.create_commit(
            repo_id,
            operations=operations,
            commit_message=message,
            repo_type="model",
            revision=revision,
            create_pr=create_pr,
        )
    url = info.pr_url if create_pr and getattr(info, "pr_url", None) else info.commit_url
    return str(url)


@contextmanager
def _hub_errors(repo_id: str, token: str) -> Iterator[None]:
    """Turn huggingface_hub / network exceptions into one-line `UploadError`s with the token scrubbed."""
    try:
        yield
    except Exception as exc:
        message = _describe_hub_error(exc, repo_id)
        if message is None:
            raise
        raise UploadError(_redact(message, token)) from None


def _describe_hub_error(exc: Exception, repo_id: str) -> str | None:
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError, OfflineModeIsEnabled

    if isinstance(exc, OfflineModeIsEnabled):
        return "cannot reach the Hugging Face Hub: offline mode is enabled (unset HF_HUB_OFFLINE to upload)"
    if isinstance(exc, HFValidationError):
        return f"invalid repo id {repo_id!r}: {_one_line(exc)}"
    if isinstance(exc, HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        server = f" (server says: {_one_line(Exception(exc.server_message))})" if exc.server_message else ""
        if status == 401:
            return f"authentication failed (HTTP 401): the Hub rejected the token{server}; {LOGIN_HINT}"
        if status == 403:
            return (
                f"permission denied (HTTP 403): the token cannot write to {repo_id}{server}; "
                "use a token with write access to that namespace"
            )
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"the Hub refused the upload (HTTP {status}): {first_line}{server}"
    if isinstance(exc, _network_errors()):
        return f"cannot reach the Hugging Face Hub (network error: {type(exc).__name__}); check your connection"
    return None


def _network_errors() -> tuple[type[BaseException], ...]:
    """Connection-level exception types: huggingface_hub 2.x talks through httpx2, 1.x through httpx."""
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module_name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        errors.append(module.TransportError)
    return tuple(errors)


def _redact(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text


# ---------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="upload.py",
        description=(
            "Validate the PPSF tokenizer repo and upload its allowlisted files to the Hugging Face Hub "
            "in one commit. The token is read from HF_TOKEN or the `hf auth login` store and is never "
            "printed."
        ),
    )
    parser.add_argument("--repo-id", required=True, metavar="OWNER/NAME", help="target model repo on the Hub")
    parser.add_argument(
        "--private", action="store_true", help="create the repo as private (no effect if it already exists)"
    )
    parser.add_argument(
        "--revision",
        metavar="BRANCH",
        help=("branch to commit to, created if missing (with --create-pr: the branch the PR targets); default: main"),
    )
    parser.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing directly")
    parser.add_argument("--commit-message", metavar="TEXT", help=f"commit title (default: {DEFAULT_COMMIT_MESSAGE!r})")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="validate and list the files that would be sent with their sizes; needs no token, sends nothing",
    )
    parser.add_argument(
        "--with-adapter",
        action="store_true",
        help=(
            f"also send {ADAPTER_DIR}/ ({', '.join(ADAPTER_REQUIRED + ADAPTER_OPTIONAL)}); "
            "an error if that folder is missing"
        ),
    )
    parser.add_argument(
        "--repo-dir",
        type=Path,
        default=Path(__file__).resolve().parent,
        metavar="DIR",
        help="the tokenizer repo folder to validate and send (default: the folder upload.py is in)",
    )
    return parser


def dry_run(repo_dir: Path, repo_id: str, *, revision: str | None, with_adapter: bool) -> int:
    """Print the files that would be sent and the validation result; return the exit code."""
    files, _ = collect_files(repo_dir, with_adapter=with_adapter)
    print(f"Dry run: nothing is sent. Files that would go to {repo_id} (revision {revision or 'main'}):")
    for repo_file in files:
        print(f"  {repo_file.path_in_repo}  {repo_file.size} bytes")
    print(f"Total: {len(files)} files, {sum(f.size for f in files)} bytes")
    problems = validate_repo(repo_dir, with_adapter=with_adapter)
    if problems:
        print(f"Validation: FAILED ({len(problems)} problem(s))")
        for problem in problems:
            print(f"  - {problem}")
        return 1
    print("Validation: OK")
    return 0


def main(argv: Sequence[str] | None = None, *, api: Any = None) -> int:
    args = build_parser().parse_args(argv)
    token: str | None = None
    try:
        check_repo_id(args.repo_id)
        if args.dry_run:
            return dry_run(args.repo_dir, args.repo_id, revision=args.revision, with_adapter=args.with_adapter)
        token = resolve_token()
        url = upload(
            args.repo_dir,
            args.repo_id,
            token=token,
            private=args.private,
            revision=args.revision,
            create_pr=args.create_pr,
            commit_message=args.commit_message,
            with_adapter=args.with_adapter,
            api=api,
        )
    except ValidationError as err:
        print(_redact(f"error: {err}; nothing was sent", token), file=sys.stderr)
        return 1
    except UploadError as err:
        print(_redact(f"error: {err}", token), file=sys.stderr)
        return 1
    except Exception as err:  # never a traceback that could carry the token
        print(_redact(f"error: unexpected {type(err).__name__}: {_one_line(err)}", token), file=sys.stderr)
        return 1
    print(("Pull request: " if args.create_pr else "Commit: ") + url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
