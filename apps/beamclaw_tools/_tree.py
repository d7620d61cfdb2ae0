"""The tools app: its configuration and its tree (the registry, holding the built-ins)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

import supervision as sv
from beamclaw_base import Secret, structure_config

from ._curl import Credential, CurlTool
from ._files import DeleteFileTool, ReadFileTool, WriteFileTool
from ._jq import JqTool
from ._registry import ToolRegistry
from ._shell import BashTool, Isolation, TerminalTool
from ._shell_rules import DEFAULT_ALLOW, DEFAULT_ASK, DEFAULT_DENY, Pattern, ShellRules
from ._tool import Tool
from ._web_search import BRAVE_MAX_RESULTS, WebSearchTool


@attrs.frozen
class ShellConfig:
    """``[tools.bash]`` / ``[tools.terminal]`` (each its own table, same defaults).

    ``isolation``: the jail every command runs in: "bubblewrap" (the default), "docker",
    or "none" (unjailed, on purpose: nothing but the rules then stands in the way).
    ``output_limit``: bytes kept of each of stdout and stderr.
    ``allow`` / ``ask`` / ``deny``: command patterns (see `beamclaw_tools.Pattern`),
    matched against every simple command of a line; a list given replaces its default.
    """

    #: A command still running after this long is killed, with everything it started.
    timeout_seconds: float = 30.0
    #: Bytes kept of each of stdout and stderr (the first ones and the last ones).
    output_limit: int = 16_000
    #: The jail: "bubblewrap", "docker", or "none" (unjailed, on purpose).
    isolation: Isolation = "bubblewrap"
    #: Patterns of simple commands that run without asking (also under read_only).
    allow: list[str] = attrs.field(factory=lambda: list(DEFAULT_ALLOW))
    #: Patterns that ask the user, whatever ``allow`` says.
    ask: list[str] = attrs.field(factory=lambda: list(DEFAULT_ASK))
    #: Patterns that refuse the whole line, under every autonomy.
    deny: list[str] = attrs.field(factory=lambda: list(DEFAULT_DENY))

    def __attrs_post_init__(self) -> None:
        for text in (*self.allow, *self.ask, *self.deny):
            Pattern(text)  # a bad pattern is a config error at load time, not at the first command

    @property
    def rules(self) -> ShellRules:
        return ShellRules(self.allow, self.ask, self.deny)


@attrs.frozen
class CurlConfig:
    """``[tools.curl]``: HTTP requests, to public addresses only unless ``allowed_hosts`` says."""

    #: The longest a request may take, connecting and reading included.
    timeout_seconds: float = 20.0
    #: Characters of the response body kept for the model.
    output_limit: int = 16_000
    #: ``"host"`` or ``"host:port"`` reachable although private or loopback (opened on
    #: purpose past the SSRF guard).
    allowed_hosts: list[str] = attrs.field(factory=list)
    #: ``[tools.curl.credentials.NAME]``: a header (``api_key = { env }``, ``hosts``,
    #: ``header``, ``prefix``) sent to those hosts only.
    credentials: dict[str, Credential] = attrs.field(factory=dict)


@attrs.frozen
class JqConfig:
    """``[tools.jq]``: each filter runs in a process of its own, killed after
    ``timeout_seconds`` (wall clock; the CPU limit is the same, rounded up) or when it
    needs more than ``memory_mib`` of address space; ``output_limit`` characters of
    output are kept, ``max_input`` characters of JSON accepted, and at most
    ``max_concurrent`` filters run at once."""

    timeout_seconds: float = 5.0
    memory_mib: int = 256
    output_limit: int = 100_000
    max_input: int = 2_000_000
    max_concurrent: int = 4


@attrs.frozen
class WebSearchConfig:
    """``[tools.web_search]``: the Brave Search API."""

    #: ``{ env = "VAR" }``: the API key, read when the tool is first used.
    api_key: Secret = Secret("BRAVE_API_KEY")
    #: The search endpoint.
    base_url: str = "https://api.search.brave.com/res/v1/web/search"
    #: The most results one search may return (the model asks for up to this many; 1 to 20).
    max_results: int = 10

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.max_results <= BRAVE_MAX_RESULTS:
            raise ValueError(f"max_results must be 1 to {BRAVE_MAX_RESULTS}, not {self.max_results}")


@attrs.frozen
class ToolsConfig:
    """``[tools]``: ``disabled`` lists built-ins to leave out; one sub-table per tool."""

    #: false leaves the tools app out; core, and every app built on it, needs it.
    enabled: bool = True
    #: Built-in tools to leave out, by name (``["web_search", "curl"]``).
    disabled: list[str] = attrs.field(factory=list)
    bash: ShellConfig = ShellConfig()
    terminal: ShellConfig = ShellConfig()
    curl: CurlConfig = CurlConfig()
    jq: JqConfig = JqConfig()
    web_search: WebSearchConfig = WebSearchConfig()


def builtin_tools(config: ToolsConfig) -> list[Tool]:
    """The built-in tools as configured, without the disabled ones."""
    curl = config.curl
    tools: list[Tool] = [
        BashTool(
            config.bash.timeout_seconds,
            config.bash.output_limit,
            isolation=config.bash.isolation,
            rules=config.bash.rules,
        ),
        TerminalTool(
            config.terminal.timeout_seconds,
            config.terminal.output_limit,
            isolation=config.terminal.isolation,
            rules=config.terminal.rules,
        ),
        CurlTool(
            timeout=curl.timeout_seconds,
            output_limit=curl.output_limit,
            allowed_hosts=frozenset(curl.allowed_hosts),
            credentials=dict(curl.credentials),
        ),
        JqTool(
            timeout=config.jq.timeout_seconds,
            memory_mib=config.jq.memory_mib,
            output_limit=config.jq.output_limit,
            max_input=config.jq.max_input,
            max_concurrent=config.jq.max_concurrent,
        ),
        ReadFileTool(),
        WriteFileTool(),
        DeleteFileTool(),
        WebSearchTool(config.web_search.api_key, config.web_search.base_url, max_results=config.web_search.max_results),
    ]
    names = {tool.definition.name for tool in tools}
    unknown = sorted(set(config.disabled) - names)
    if unknown:
        raise ValueError(f"tools.disabled: unknown tool {unknown[0]!r} (built-ins: {', '.join(sorted(names))})")
    return [tool for tool in tools if tool.definition.name not in config.disabled]


def supervision_tree(table: dict[str, Any], data_dir: Path) -> sv.Supervisor:
    config = structure_config(table, ToolsConfig, "tools")
    return sv.Supervisor(
        [sv.ChildSpec("registry", ToolRegistry.start, args=(tuple(builtin_tools(config)),))],
        name="beamclaw_tools",
        # A restarted registry is whole again at once (the apps' tool providers register
        # their tools again), so crashes are absorbed here, not escalated.
        intensity=20,
        period=10.0,
    )
