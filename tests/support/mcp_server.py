"""A real MCP server for the tests, written with the SDK's server API.

Over stdio (``python -m tests.support.mcp_server [--mode MODE]``), streamable HTTP
(`http_app`) or the legacy HTTP+SSE (`sse_app`), the last two served on loopback with
`tests.support.asgi_server.serve_asgi`. Its tools:

- ``add(a, b)``: a sum (annotated read-only);
- ``pid()``: the server's process id, to kill it from a test;
- ``slow(seconds)``: an answer after a while (a call to be in flight);
- ``write_note(text)``: a side effect (no hints: not safe to repeat);
- ``grow()``: adds the tool ``extra`` and tells the client the tool list changed;
- ``secret()``: the value of ``MCP_TEST_SECRET``, ``env_names()``: the variables it has
  (to see what reaches a server);
- ``big(size)``: a result of *size* characters;
- ``broken``: a tool whose input schema is not a JSON schema (the host must skip it).

Modes: ``normal``; ``crash`` (writes a line on stderr and exits before answering).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations


def build(name: str = "test-server") -> MCPServer[Any]:
    """The server, with its tools."""
    server: MCPServer[Any] = MCPServer(name, log_level="WARNING")
    notes: list[str] = []  # this server's own: a restarted server starts with none

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def pid() -> str:
        """The server's process id."""
        return str(os.getpid())

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def slow(seconds: float) -> str:
        """Answer after a while (a cancelled call is noted in the file MCP_TEST_MARKS names)."""
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            marks = os.environ.get("MCP_TEST_MARKS")
            if marks:
                with open(marks, "a", encoding="utf-8") as file:
                    file.write("cancelled\n")
            raise
        return f"slept {seconds}"

    @server.tool()
    def write_note(text: str) -> str:
        """Keep a note (a side effect)."""
        notes.append(text)
        return f"{len(notes)} notes"

    @server.tool()
    async def grow(ctx: Context[Any]) -> str:
        """Add a tool, and say the list changed."""

        def extra() -> str:
            """A tool that came later."""
            return "extra!"

        server.add_tool(extra)
        await ctx.session.send_tool_list_changed()  # notifications/tools/list_changed
        return "grown"

    @server.tool()
    def secret() -> str:
        """What MCP_TEST_SECRET holds here."""
        return os.environ.get("MCP_TEST_SECRET", "(unset)")

    @server.tool()
    def env_names() -> str:
        """The names of the environment variables the server has."""
        return " ".join(sorted(os.environ))

    @server.tool()
    def big(size: int) -> str:
        """A long result."""
        return "x" * size

    @server.tool()
    def broken() -> str:
        """A tool with a broken schema."""
        return "never"

    server._tool_manager._tools["broken"].parameters = {"type": "object", "properties": {"x": {"type": 5}}}
    return server


def http_app() -> Any:
    """The server as an ASGI app (streamable HTTP at ``/mcp``)."""
    return build().streamable_http_app()


def sse_app() -> Any:
    """The server as an ASGI app on the legacy HTTP+SSE transport (events at ``/sse``)."""
    return build().sse_app()


def main() -> None:
    parser = argparse.ArgumentParser(description="An MCP server for BeamClaw's tests.")
    parser.add_argument("--mode", choices=["normal", "crash"], default="normal")
    mode = parser.parse_args().mode
    if mode == "crash":
        print("test-server: cannot open /nonexistent/config.json", file=sys.stderr, flush=True)
        raise SystemExit(3)
    build().run()


if __name__ == "__main__":
    main()
