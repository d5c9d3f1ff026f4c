"""The pharmacy tools as an MCP server, with the official SDK (`mcp`): over stdio, or streamable HTTP on 127.0.0.1.

    python -m agent.mcp                      # stdio: what a client configuration launches
    python -m agent.mcp --http --port 8765   # streamable HTTP at http://127.0.0.1:8765/mcp

Each tool's inputSchema is the schema the agent shows its model (``agent.engine.toolbox.tool_schema``, from the
function's type hints and docstring), plus the optional ``language`` ("tr" or "en", the patient's language)
that the agent itself fills from the conversation. Calls run through the agent's ``Toolbox``: arguments are
checked against that schema, each call has a timeout, and every failure is a result with ``isError`` true and
``structuredContent`` ``{"error": {"code", "message"}}`` (the tools' codes, docs/tools.md, and the engine's:
``invalid_arguments``, ``tool_timeout``, ``tool_error``). A tool name the server does not have is an MCP error
(JSON-RPC invalid params), as the protocol asks.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from transformers.utils import get_json_schema

from .engine.toolbox import Toolbox, arguments_schema, context_arguments, error
from .pharmacy.drugdb import load_db
from .pharmacy.tools import PHARMACY_TOOLS

LANGUAGE = "language"  # the one context argument a client may give: the patient's language
DEFAULT_TIMEOUT = 10.0  # seconds a call may run (the agent's own default, AgentConfig.tool_timeout)


def mcp_tool(fn: Callable, schema: dict) -> types.Tool:
    """The MCP description of fn: schema (the agent's, from tool_schema) with fn's own ``language``, if it takes
    one (its description from fn's docstring), as standard JSON Schema."""
    function = schema["function"]
    parameters = arguments_schema(function.get("parameters", {}))
    if LANGUAGE in context_arguments(fn):
        own = arguments_schema(get_json_schema(fn)["function"]["parameters"])
        parameters.setdefault("properties", {})[LANGUAGE] = own["properties"][LANGUAGE]
    return types.Tool(name=function["name"], description=function.get("description"), input_schema=parameters)


def _result(result: Any) -> types.CallToolResult:
    """A tool's result (or structured error) as an MCP result: JSON text and the same value as structured content."""
    failed = isinstance(result, dict) and "error" in result
    text = json.dumps(result, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=result, is_error=failed)


def build_server(tools: Sequence[Callable] = PHARMACY_TOOLS, timeout: float = DEFAULT_TIMEOUT) -> Server:
    """An MCP server of tools (typed, Google-docstring functions; the pharmacy's by default); timeout: seconds
    a call may run before it is answered with a tool_timeout error."""
    # No repeat limit: a server serves many conversations, and refusing the third identical call is the agent
    # loop's guard against a model stuck in a loop, not a tool rule.
    toolbox = Toolbox(list(tools), timeout=timeout, repeat_limit=None)
    functions = dict(zip(toolbox.names, toolbox.functions, strict=True))
    listed = [mcp_tool(functions[name], schema) for name, schema in zip(toolbox.names, toolbox.schemas, strict=True)]
    by_name = {tool.name: tool for tool in listed}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in functions:
            message = f"There is no tool {params.name!r}. Available tools: {', '.join(toolbox.names)}."
            raise MCPError(types.INVALID_PARAMS, message, data=error("unknown_tool", message))
        arguments = dict(params.arguments or {})
        context = {}
        if LANGUAGE in context_arguments(functions[params.name]) and LANGUAGE in arguments:
            language = arguments.pop(LANGUAGE)
            if language not in ("tr", "en", None):
                message = f"{params.name}: language: {language!r} is not one of 'tr', 'en'."
                return _result(error("invalid_arguments", message))
            context[LANGUAGE] = language
        # Toolbox.call blocks (it waits up to the timeout for the tool's thread): off the event loop, so a slow
        # tool does not hold up other requests.
        result = await anyio.to_thread.run_sync(toolbox.call, params.name, arguments, context)
        return _result(result)

    def input_schema(name: str) -> dict | None:
        tool = by_name.get(name)
        return tool.input_schema if tool else None

    return Server(
        "ppsf-pharmacy",
        version=_version(),
        instructions="Offline pharmacy tools (Turkish and English medicine data). Pass language='tr' or 'en' "
        "for answers in the patient's language. Results are information, not medical advice.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ppsf")
    except PackageNotFoundError:  # a checkout that is not installed
        return "0"


async def serve_stdio(server: Server) -> None:
    """Serve one client over this process's stdin and stdout."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_http(server: Server, port: int) -> None:
    """Serve streamable HTTP at http://127.0.0.1:PORT/mcp until stopped (only this machine can reach it)."""
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main(argv: Sequence[str] | None = None, tools: Sequence[Callable] = PHARMACY_TOOLS) -> None:
    parser = argparse.ArgumentParser(prog="python -m agent.mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1 instead of stdio")
    parser.add_argument("--port", type=int, default=8765, help="the HTTP port (default 8765)")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help=f"seconds a call may run (default {DEFAULT_TIMEOUT:g})"
    )
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error(f"--timeout must be > 0, got {args.timeout:g}")
    if not 0 < args.port < 65536:
        parser.error(f"--port must be 1-65535, got {args.port}")
    server = build_server(tools, timeout=args.timeout)
    load_db()  # the drug data read now (about a second), so that no call's timeout pays for reading it
    if args.http:
        serve_http(server, args.port)
    else:
        anyio.run(serve_stdio, server)


if __name__ == "__main__":
    main()
