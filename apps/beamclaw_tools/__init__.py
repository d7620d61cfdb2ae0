"""Tools: the tool behaviour, the registry process, and the built-in tools.

A tool is anything with a `ToolDefinition`, ``requires_approval``, ``min_autonomy``
and ``async execute(args, session, context)``, and optionally a per-call
``approval_reason(args)`` (read through `approval_reason`), ``refusal_reason(args,
context)`` (read through `refusal_reason`) and, for a tool that runs commands under
permission rules (`ShellRules`), ``command_verdict(args, allowed)`` (read through
`command_verdict`). `run_tool` checks the arguments
against the tool's JSON schema before it runs, and turns every failure into an
error result the model can read.
"""

from ._curl import Credential, CurlTool
from ._files import DeleteFileTool, ReadFileTool, WriteFileTool
from ._invoke import approval_reason, command_verdict, refusal_reason, run_tool
from ._jq import JqTool
from ._net_guard import is_public
from ._registration import keep_registered
from ._registry import REGISTRY, list_tools, lookup_tool, register_tool, tool_definitions, unregister_tool
from ._shell import ISOLATIONS, BashTool, Isolation, TerminalTool, jail_report
from ._shell_rules import Pattern, ShellRules, SimpleCommand, Verdict, exact_pattern
from ._tool import Autonomy, Tool, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSession, object_schema
from ._tree import ToolsConfig, builtin_tools, supervision_tree
from ._web_search import WebSearchTool

__all__ = [
    "jail_report",
    "ISOLATIONS",
    "REGISTRY",
    "Autonomy",
    "BashTool",
    "Credential",
    "CurlTool",
    "DeleteFileTool",
    "Isolation",
    "Pattern",
    "JqTool",
    "ReadFileTool",
    "ShellRules",
    "SimpleCommand",
    "TerminalTool",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolResult",
    "ToolSession",
    "ToolsConfig",
    "Verdict",
    "WebSearchTool",
    "WriteFileTool",
    "approval_reason",
    "builtin_tools",
    "exact_pattern",
    "command_verdict",
    "is_public",
    "list_tools",
    "lookup_tool",
    "object_schema",
    "refusal_reason",
    "register_tool",
    "run_tool",
    "supervision_tree",
    "tool_definitions",
    "keep_registered",
    "unregister_tool",
]
