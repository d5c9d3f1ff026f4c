"""The package's layers and its installability: the engine knows no pharmacy, and a wheel runs on its own."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from agent.ppsf import REPO_ROOT

PACKAGE = REPO_ROOT / "agent"


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every module a file imports (relative imports resolved against its package)."""
    package = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            names.add(module)
            names |= {f"{module}.{alias.name}" for alias in node.names}
    return names


@pytest.mark.parametrize("path", sorted((PACKAGE / "engine").glob("*.py")), ids=lambda p: p.name)
def test_the_engine_imports_nothing_from_the_pharmacy(path):
    pharmacy = {m for m in imported_modules(path) if m.startswith(("agent.pharmacy", "agent.eval", "agent.cli"))}
    assert not pharmacy, f"{path.name} imports {sorted(pharmacy)}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "ppsf").glob("*.py")), ids=lambda p: p.name)
def test_the_format_imports_nothing_from_the_engine_or_the_front_ends(path):
    above = {m for m in imported_modules(path) if m.startswith(("agent.engine", "agent.pharmacy", "agent.eval"))}
    above |= {m for m in imported_modules(path) if m.startswith(("agent.cli", "agent.web", "agent.export"))}
    assert not above, f"{path.name} imports {sorted(above)}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "eval").glob("*.py")), ids=lambda p: p.name)
def test_the_evaluation_imports_nothing_from_the_cli(path):
    front = {m for m in imported_modules(path) if m.startswith(("agent.cli", "agent.web"))}
    assert not front, f"{path.name} imports {sorted(front)}"


HEAVY = ("torch", "transformers")
IMPORTED = "import sys; {imports}; print(' '.join(m for m in {heavy!r} if m in sys.modules))"


def modules_after(imports: str) -> set[str]:
    """Which of HEAVY a fresh interpreter holds in sys.modules after running `imports`."""
    code = IMPORTED.format(imports=imports, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(out.stdout.split())


def test_the_format_and_the_package_import_neither_torch_nor_transformers():
    """The template, markers and parser alone (`import agent.ppsf`, `import agent`) do not load the engine."""
    light = "import agent, agent.ppsf; from agent.ppsf import STOP_STRINGS, chat_template, feed, parse_reply"
    light += "; from agent import response_template, use_ppsf; chat_template(); response_template()"
    assert modules_after(light) == set()
    # The check sees an import when one happens: the first engine name asked of `agent` loads both.
    assert modules_after("import agent; agent.AgentConfig") == set(HEAVY)


def test_every_public_name_of_the_package_resolves_to_its_module():
    import agent

    assert sorted(agent.__all__) == sorted(agent._EXPORTS)
    for name, module in agent._EXPORTS.items():
        assert getattr(agent, name) is getattr(importlib.import_module(module, "agent"), name), name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        agent.nothing  # noqa: B018


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_edits_sys_path_or_the_environment_on_import(path):
    text = path.read_text(encoding="utf-8")
    assert "sys.path.insert" not in text and 'environ.setdefault("HF_HUB_OFFLINE"' not in text


@pytest.mark.slow
def test_a_built_wheel_runs_the_agent_outside_the_checkout(tmp_path):
    """`pip install .` (not editable): templates, data and the adapter come from the package, not the checkout."""
    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    built = subprocess.run([*build, str(REPO_ROOT)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    # pyproject declares its packages and their data as setuptools expects: no warning wall while installing
    assert "Warning" not in built.stdout + built.stderr, (built.stdout + built.stderr)[-2000:]
    (wheel,) = wheels.glob("ppsf-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    # The dependencies (torch, transformers...) from this test's environment, by path only: its .pth files,
    # among them the editable install of the checkout, are not processed.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        check=True,
        timeout=300,
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    where = subprocess.check_output(
        [python, "-c", "import agent; print(agent.__file__)"], cwd=tmp_path, env=env, text=True
    )
    assert where.startswith(str(site)), where  # the installed copy, not the checkout
    adapter = "from agent.engine.models import default_adapter_dir as d; print(d() / 'adapter_config.json')"
    adapter_config = subprocess.check_output([python, "-c", adapter], cwd=tmp_path, env=env, text=True).strip()
    assert adapter_config.startswith(str(site)) and Path(adapter_config).is_file()  # the tuned default ships too
    question = ["-m", "agent", "Parol ne işe yarar?", "--max-new-tokens", "64", "--transcript", str(tmp_path / "t")]
    done = subprocess.run([python, *question], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "search_drug" in done.stderr and "Parasetamol" in done.stdout + done.stderr
    assert "warning: not applying the PPSF adapter" not in done.stderr
    check = (
        "from transformers import AutoTokenizer; print(AutoTokenizer.from_pretrained(%r).response_template['version'])"
    )
    out = subprocess.check_output([python, "-c", check % str(REPO_ROOT)], cwd=tmp_path, env=env, text=True)
    assert out.strip() == "1"
