"""A server's ``tools/list``, read as the untrusted input it is.

The SDK reads a listing whole: one tool it cannot read fails them all, and the server
is restarted for ever. So each answer to ``tools/list`` is checked on its way from the
transport to the session (`Listings`), one tool at a time, and a tool that cannot be
offered to a model is taken out with the reason (`beamclaw mcp tools` shows it):

- it is not a tool of the protocol version spoken (no name, a description that is
  not text, an input schema that is not an object schema...);
- its input schema is invalid, or larger than `MAX_SCHEMA_BYTES` once serialised (it
  is sent with every request to the model);
- its name is longer than `MAX_NAME_CHARS`, holds something the scrubber hides, or
  characters that act instead of showing (escape sequences, bidi overrides: `_text`).

Descriptions, its own and those in its input schema, lose such characters, and are
scrubbed and cut to `MAX_DESCRIPTION_CHARS` (its own); output schemas are
dropped: nothing of a server's is ever run as a schema on the event loop (a crafted
``pattern`` or a tree of ``$ref`` takes exponential time; see `McpTool.argument_schema`).
The check runs in a worker thread. Then (`listed`) only the tools the server's ``tools``
patterns name are offered, each name once, at most ``mcp.max_tools_per_server``.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any, Final

import attrs
import pydantic
import trio
from jsonschema import Draft202012Validator, SchemaError
from mcp import ClientSession, types
from mcp.shared.message import SessionMessage
from mcp_types.methods import validate_server_result

from beamclaw_obs import scrub

from ._config import ServerConfig
from ._text import visible, visible_schema

#: A tool's input schema larger than this (serialised) is skipped.
MAX_SCHEMA_BYTES: Final = 65_536
#: A description longer than this is cut (it is the model's to read, in every request).
MAX_DESCRIPTION_CHARS: Final = 4_000
#: A tool's name longer than this is skipped (the MCP specification's own bound).
MAX_NAME_CHARS: Final = 128
#: A listing of more pages than this is read no further.
_MAX_PAGES: Final = 100
#: The protocol version assumed until ``initialize`` says which one is spoken.
_FIRST_VERSION: Final = "2025-11-25"


@attrs.define
class Listings:
    """Checks the answers to ``tools/list`` between a server's transport and its session."""

    #: The protocol version the session speaks (set once ``initialize`` is answered).
    version: str = _FIRST_VERSION
    #: Why each tool taken out of the answers since `take_skipped` was.
    skipped: list[str] = attrs.field(factory=list)
    _asked: set[Any] = attrs.field(factory=set)

    def sent(self, message: SessionMessage) -> None:
        """Note a request for ``tools/list`` going out, to know its answer when it comes."""
        if isinstance(message.message, types.JSONRPCRequest) and message.message.method == "tools/list":
            self._asked.add(message.message.id)

    async def received(self, message: SessionMessage) -> SessionMessage:
        """*message*, with its tools checked when it answers a ``tools/list``."""
        answer = message.message
        if not isinstance(answer, types.JSONRPCResponse | types.JSONRPCError) or answer.id not in self._asked:
            return message
        self._asked.discard(answer.id)
        if isinstance(answer, types.JSONRPCError):
            return message
        result, skipped = await trio.to_thread.run_sync(_checked, answer.result, self.version)
        self.skipped += skipped
        return SessionMessage(answer.model_copy(update={"result": result}), message.metadata)

    def take_skipped(self) -> list[str]:
        skipped, self.skipped = self.skipped, []
        return skipped


def _checked(result: dict[str, Any], version: str) -> tuple[dict[str, Any], list[str]]:
    """A ``tools/list`` result with only its usable tools, and why each other one was taken out."""
    entries = result.get("tools")
    if not isinstance(entries, list):
        return {**result, "tools": []}, [f"the listing's tools is {type(entries).__name__}, not a list"]
    tools: list[dict[str, Any]] = []
    skipped: list[str] = []
    for index, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        label = scrub(visible(name[:MAX_NAME_CHARS])) if isinstance(name, str) else f"tool #{index}"
        problem = _problem(entry, version)
        if problem:
            skipped.append(f"{label}: {problem}")
            continue
        try:
            schema = visible_schema(entry["inputSchema"])
        except RecursionError:
            skipped.append(f"{label}: its input schema cannot be read (nested too deeply)")
            continue
        description = visible(entry.get("description") or entry.get("title") or entry["name"])
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[:MAX_DESCRIPTION_CHARS] + " [... cut]"
        kept = {key: value for key, value in entry.items() if key != "outputSchema"}
        tools.append({**kept, "description": scrub(description), "inputSchema": schema})
    return {**result, "tools": tools}, skipped


def _problem(entry: Any, version: str) -> str | None:
    """Why one entry of a listing cannot be offered, or None."""
    try:
        validate_server_result("tools/list", version, {"tools": [entry]})
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"][2:]) or "the tool"
        return f"it is not a valid tool ({where}: {error['msg']})"
    except RecursionError:
        return "it is not a valid tool (nested too deeply)"
    name = entry["name"]
    if not 0 < len(name) <= MAX_NAME_CHARS:
        return f"its name is {len(name)} characters, not 1 to {MAX_NAME_CHARS}"
    if scrub(name) != name:
        return "its name holds something that looks like a secret"
    if visible(name) != name:
        return "its name holds control or format characters (escape sequences, bidi overrides...)"
    schema = entry["inputSchema"]
    try:
        size = len(json.dumps(schema))
        if size > MAX_SCHEMA_BYTES:
            return f"its input schema is {size:,} bytes, more than {MAX_SCHEMA_BYTES:,}"
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"its input schema is invalid: {exc.message[:200]}"
    except (RecursionError, ValueError, TypeError):
        return "its input schema cannot be read (nested too deeply)"
    return None


async def listed(
    session: ClientSession, listings: Listings, server: ServerConfig, limit: int
) -> tuple[list[types.Tool], list[str]]:
    """The tools of *server* to offer, across pages, and why any listed one is not offered."""
    listings.take_skipped()
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    else:
        listings.skipped.append(f"the listing has more than {_MAX_PAGES} pages: the rest were not read")
    return _chosen(tools, listings.take_skipped(), server, limit)


def _chosen(
    tools: list[types.Tool], skipped: list[str], server: ServerConfig, limit: int
) -> tuple[list[types.Tool], list[str]]:
    """The tools the server's ``tools`` patterns name, each once, at most *limit*."""
    offered: list[types.Tool] = []
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            skipped.append(f"{tool.name}: listed twice (the first is offered)")
        elif server.tools and not any(fnmatch.fnmatchcase(tool.name, pattern) for pattern in server.tools):
            continue  # not chosen in config.toml: not a problem to report
        elif len(offered) >= limit:
            skipped.append(f"{tool.name}: beyond mcp.max_tools_per_server ({limit})")
        else:
            offered.append(tool)
        seen.add(tool.name)
    return offered, skipped
