"""The default template renders byte-identically in Jinja2 and in @huggingface/jinja (transformers.js)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from jinja2.exceptions import TemplateError
from ppsf_helpers import TEMPLATE, conversation, render_raw
from test_template import ERRORS

from agent.ppsf import REPO_ROOT

JS_DIR = REPO_ROOT / "tests" / "js"


class JsRenderer:
    """One long-lived node process running tests/js/render.mjs."""

    def __init__(self) -> None:
        node = shutil.which("node")
        assert node, "node is required for the portability tests (make setup installs @huggingface/jinja)"
        assert (JS_DIR / "node_modules" / "@huggingface" / "jinja").is_dir(), "run: make setup"
        self.proc = subprocess.Popen(
            [node, "render.mjs"],
            cwd=JS_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def render(self, **context) -> dict:
        self.proc.stdin.write(json.dumps({"template": TEMPLATE, "context": context}, ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def js():
    renderer = JsRenderer()
    yield renderer
    renderer.close()


def python_render(**context) -> dict:
    try:
        return {"text": render_raw(**context)}
    except TemplateError as e:
        return {"error": str(e)}


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "spec" / "golden").glob("*.json")), ids=lambda p: p.stem)
def test_golden_in_transformers_js(js, path):
    case = json.loads(path.read_text(encoding="utf-8"))
    out = js.render(messages=case["messages"], add_generation_prompt=case["add_generation_prompt"])
    assert out == {"text": case["expected"]}


@pytest.mark.parametrize(("messages", "message"), ERRORS, ids=[e[1][:40] for e in ERRORS])
def test_errors_are_the_same(js, messages, message):
    py, out = python_render(messages=messages), js.render(messages=messages)
    assert message in py["error"]
    assert out == py


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(case=conversation())
def test_corpus_renders_identically(js, case):
    py = python_render(**case)
    assert "text" in py
    assert js.render(**case) == py
