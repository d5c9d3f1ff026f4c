"""`python -m agent.mcp`, driven by the official SDK's client over stdio and streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from servers import free_port, running

from agent.engine.toolbox import arguments_schema, tool_schema
from agent.pharmacy.tools import PHARMACY_TOOLS

ROOT = Path(__file__).resolve().parent.parent
ENV = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
READ_TIMEOUT = 60.0  # a bound on every request, so that a broken server fails the test instead of hanging it

# One call per tool, with the arguments a client would send (the patient's language where it matters).
CALLS = {
    "search_drug": {"drug": "Parol", "language": "en"},
    "get_drug_info": {"drug": "ibuprofen", "section": "side_effects"},
    "check_interactions": {"drugs": ["aspirin", "warfarin"], "language": "tr"},
    "calculate_dose": {"drug": "parasetamol", "weight_kg": 20, "age_years": 6},
    "find_alternatives": {"drug": "Nurofen"},
    "check_contraindications": {"drug": "ibuprofen", "conditions": ["pregnancy"], "language": "en"},
}

# A server of the six tools and one that never returns, called with a 1 s timeout.
HUNG_SERVER = textwrap.dedent(
    """
    import sys, time
    from agent.mcp import main
    from agent.pharmacy.tools import PHARMACY_TOOLS

    def hang(seconds: float) -> dict:
        '''Sleep, standing for a tool that hangs.

        Args:
            seconds: How long to sleep.
        '''
        time.sleep(seconds)
        return {}

    main(sys.argv[1:], tools=[*PHARMACY_TOOLS, hang])
    """
)


def _stdio(args: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=ENV)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _http(args: list[str], log: Path) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, *args, "--http", "--port", str(port)]
    env = {**os.environ, **ENV, "PYTHONPATH": str(ROOT)}
    with running(command, env, log, lambda: _listening(port), timeout=120):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module", params=["stdio", "http"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """What Client connects to: the stdio command, or the URL of a running HTTP server."""
    args = ["-m", "agent.mcp"]
    if request.param == "stdio":
        yield _stdio(args)
    else:
        yield from _http(args, tmp_path_factory.mktemp("mcp") / "server.log")


@pytest.fixture(scope="module", params=["stdio", "http"])
def hung_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    args = ["-c", HUNG_SERVER, "--timeout", "1"]
    if request.param == "stdio":
        yield _stdio(args)
    else:
        yield from _http(args, tmp_path_factory.mktemp("mcp-hung") / "server.log")


def _session(target, work):
    """Run work(client) in one client session on target; its return value."""

    async def go():
        async with Client(target, read_timeout_seconds=READ_TIMEOUT) as client:
            return await work(client)

    return anyio.run(go)


BAD_CALLS = {
    "wrong_type": ("calculate_dose", {"drug": "parasetamol", "weight_kg": [20], "age_years": 6}),
    "unknown_argument": ("search_drug", {"drug": "Parol", "dose": 5}),
    "missing": ("get_drug_info", {"drug": "Parol"}),
    "language": ("search_drug", {"drug": "Parol", "language": "de"}),
    "out_of_range": ("calculate_dose", {"drug": "parasetamol", "weight_kg": 900, "language": "tr"}),
    "unknown_drug": ("search_drug", {"drug": "Zzyzxqol"}),
}


@pytest.fixture(scope="module")
def served(server) -> dict:
    """One client session on the server: its tool list, a call of each tool, the bad calls (a server process
    costs seconds to start, so the tests below read one session's answers)."""

    async def work(client):
        out = {"tools": (await client.list_tools()).tools}
        out["calls"] = {name: await client.call_tool(name, arguments) for name, arguments in CALLS.items()}
        out["bad"] = {key: await client.call_tool(name, arguments) for key, (name, arguments) in BAD_CALLS.items()}
        try:
            await client.call_tool("prescribe", {"drug": "Parol"})
            out["unknown_tool"] = None
        except MCPError as e:
            out["unknown_tool"] = e
        return out

    return _session(server, work)


def test_lists_the_six_tools_with_the_agents_schemas(served) -> None:
    tools = served["tools"]
    assert [t.name for t in tools] == [fn.__name__ for fn in PHARMACY_TOOLS]
    for tool, fn in zip(tools, PHARMACY_TOOLS, strict=True):
        own = tool_schema(fn)["function"]
        assert tool.description == own["description"]
        schema = dict(tool.input_schema)
        language = schema["properties"].pop("language")
        assert schema == arguments_schema(own["parameters"])  # the agent's schema, nothing else
        assert language["enum"] == ["tr", "en"] and "null" in language["type"]
        assert "language" not in schema.get("required", [])
        hidden = {"patient", "patient_text"}  # the agent's own context
        assert not hidden & set(tool.input_schema["properties"])


def test_calls_each_tool_and_answers_as_the_function(served) -> None:
    results = served["calls"]
    assert set(CALLS) == {fn.__name__ for fn in PHARMACY_TOOLS}
    for fn in PHARMACY_TOOLS:
        result = results[fn.__name__]
        assert not result.is_error, result.structured_content
        assert result.structured_content == fn(**CALLS[fn.__name__])
        assert result.content[0].text.startswith("{")
    # The patient's language decides the words: Parol (a Turkish brand) in English when asked, with the Turkish
    # usage beside it; English names answered in Turkish.
    assert "usage_tr" in results["search_drug"].structured_content
    assert results["check_interactions"].structured_content["disclaimer"].startswith("Bilgi amaçlıdır")
    assert results["check_contraindications"].structured_content["disclaimer"].startswith("For information only")


def test_bad_arguments_get_structured_errors(served) -> None:
    out = served["bad"]
    assert {key: r.structured_content["error"]["code"] for key, r in out.items()} == {
        "wrong_type": "invalid_arguments",
        "unknown_argument": "invalid_arguments",
        "missing": "invalid_arguments",
        "language": "invalid_arguments",
        "out_of_range": "out_of_range",
        "unknown_drug": "unknown_drug",
    }
    assert all(r.is_error for r in out.values())
    assert "weight_kg" in out["wrong_type"].structured_content["error"]["message"]
    assert "dose" in out["unknown_argument"].structured_content["error"]["message"]
    assert "section" in out["missing"].structured_content["error"]["message"]
    assert "'de'" in out["language"].structured_content["error"]["message"]
    assert out["out_of_range"].structured_content["error"]["for_patient"] is True  # in the patient's Turkish
    unknown = served["unknown_tool"]
    assert isinstance(unknown, MCPError) and "prescribe" in unknown.message
    assert unknown.data["error"]["code"] == "unknown_tool"


def test_a_hung_tool_times_out_and_the_server_goes_on(hung_server) -> None:
    async def work(client):
        assert not (await client.call_tool("search_drug", {"drug": "Parol"})).is_error
        started = anyio.current_time()
        hung = await client.call_tool("hang", {"seconds": 60})
        waited = anyio.current_time() - started
        after = await client.call_tool("search_drug", {"drug": "Parol"})
        return hung, waited, after

    hung, waited, after = _session(hung_server, work)
    assert hung.is_error and hung.structured_content["error"]["code"] == "tool_timeout"
    assert "1 s" in hung.structured_content["error"]["message"]
    assert waited < 30
    assert not after.is_error and after.structured_content["drug"]
