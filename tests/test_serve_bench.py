"""bench/serve_bench.py's harness: N conversations really run at once, failures are counted, the same work per level.

The server side is `transformers serve` itself (tests/test_serving.py drives it end to end); here the agents are
stand-ins whose `run` waits at a barrier, so a level that ran fewer than N at once would time out.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("serve_bench", ROOT / "bench" / "serve_bench.py")
serve_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve_bench)


def agents_meeting_at(barrier: threading.Barrier, fail_on: str | None = None):
    seen: list[str] = []

    class Agent:
        def run(self, question: str):
            seen.append(question)
            if len(seen) > 1:  # the first is the level's untimed warm-up, alone
                barrier.wait(timeout=10)  # every conversation of the wave must be running
            if question == fail_on:
                raise RuntimeError("server went away")
            return SimpleNamespace(stats=SimpleNamespace(steps=[1, 2], generated_tokens=7))

    return Agent, seen


@pytest.mark.parametrize("n", [1, 4])
def test_a_level_runs_n_conversations_at_once(n):
    work = [f"q{i}" for i in range(8)]
    agent, seen = agents_meeting_at(threading.Barrier(n))
    row = serve_bench.level(agent, work, n)
    assert seen[0] == work[0] and sorted(seen[1:]) == sorted(work) and row["conversations"] == 8
    assert row["errors"] == []
    assert row["generated_tokens"] == 8 * 7 and row["p50_seconds"] <= row["p95_seconds"]
    assert row["conversations_per_second"] == pytest.approx(8 / row["wall_seconds"])


def test_a_failed_conversation_is_counted_and_the_others_go_on():
    agent, seen = agents_meeting_at(threading.Barrier(2), fail_on="q1")  # q0 warms up
    row = serve_bench.level(agent, ["q0", "q1", "q2", "q3"], 2)
    assert row["errors"] == ["RuntimeError: server went away"] and len(seen) == 1 + 4
    assert row["conversations_per_second"] == pytest.approx(3 / row["wall_seconds"])
    table = serve_bench.report([row | {"concurrency": 1}, row], None, "settings")
    served = [line for line in table.splitlines() if line.startswith("| transformers serve |")]
    assert len(served) == 2 and served[1].startswith("| transformers serve | 2 | 4 |")
    assert all(line.endswith("| 1.00x | 1 |") for line in served)  # same rate as the base; one error each


def test_questions_are_the_single_question_cases(tmp_path):
    path = tmp_path / "cases.jsonl"
    rows = [{"id": "a", "query": "Parol nedir?"}, {"id": "b", "messages": [{"role": "user", "content": "x"}]}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert serve_bench.questions(path, None) == ["Parol nedir?"]
    path.write_text(json.dumps(rows[1]) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="no case with a 'query'"):
        serve_bench.questions(path, None)


def test_arguments_that_cannot_be_measured_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        serve_bench.main([str(tmp_path), "--device", "cpu"])
    assert "not a model folder" in capsys.readouterr().err
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SystemExit):
        serve_bench.main([str(tmp_path), "--concurrency", "1,8,32", "--conversations", "16"])
    assert "fewer than the 32 to run at once" in capsys.readouterr().err


def test_servers_are_reported_side_by_side_with_their_first_moves():
    call = [["search_drug", {"drug": "Parol"}]]
    base = {"concurrency": 1, "conversations": 2, "wall_seconds": 2.0, "conversations_per_second": 1.0}
    base |= {"p50_seconds": 1.0, "p95_seconds": 1.5, "errors": [], "first": [call, "Merhaba"]}
    rows = [
        base | {"server": "llama_cpp.server"},
        base | {"server": "vLLM (CPU build)", "first": [call, None]},
        base | {"server": "vLLM (CPU build)", "concurrency": 8, "conversations_per_second": 2.0, "first": [call, "x"]},
    ]
    table = serve_bench.report(rows, None, "settings")
    assert "| llama_cpp.server | 1 | 2 | 2.0 | 1.000 | 1.00 | 1.50 | 2/2 | 1.00x | 0 |" in table
    assert "| vLLM (CPU build) | 1 | 2 | 2.0 | 1.000 | 1.00 | 1.50 | 1/2 | 1.00x | 0 |" in table  # None never matches
    assert "| vLLM (CPU build) | 8 | 2 | 2.0 | 2.000 | 1.00 | 1.50 | 1/2 | 2.00x | 0 |" in table  # vs its own 1
    wire = {"id": "c", "type": "function", "function": {"name": "search_drug", "arguments": '{"drug": "Parol"}'}}
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": [wire]}]
    assert serve_bench.first_move(messages) == call
    assert serve_bench.first_move([{"role": "assistant", "content": "Merhaba"}]) == "Merhaba"
