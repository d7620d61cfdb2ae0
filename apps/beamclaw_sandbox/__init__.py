"""The sandbox app: every command the agent runs is jailed.

Two backends behind the `beamclaw_base.Jail` interface: bubblewrap (the light jail of
``bash``, ``terminal`` and skill scripts) and Docker (code execution with MCP: a warm
container per scope, the tool bridge, the PII tokenizer, the tool policy).
"""

from ._admin import build_image, containers_of, engine_status, remove_container
from ._bridge import Bridge, ToolCaller
from ._bubblewrap import BubblewrapJail
from ._config import (
    BubblewrapConfig,
    PiiConfig,
    PolicyConfig,
    PolicyRule,
    SandboxConfig,
    parse_sandbox_config,
    parse_size,
)
from ._docker import DockerEngine, EngineUnavailable, ImageMissing
from ._env import container_environment
from ._exec_tool import ExecTool
from ._jails import JailFactory, JailServer, session_jails
from ._pii import PiiTokenizer
from ._registry import SandboxUnavailable, ensure_sandbox, kill_sandbox, list_sandboxes, sandbox_status
from ._runtime import SandboxRuntime
from ._tree import supervision_tree

__all__ = [
    "BubblewrapConfig",
    "PiiConfig",
    "PolicyConfig",
    "PolicyRule",
    "SandboxConfig",
    "parse_sandbox_config",
    "parse_size",
    # the jails of bash, terminal and skill scripts
    "BubblewrapJail",
    "JailFactory",
    "JailServer",
    "session_jails",
    # Docker code execution
    "Bridge",
    "DockerEngine",
    "EngineUnavailable",
    "ExecTool",
    "ImageMissing",
    "PiiTokenizer",
    "SandboxRuntime",
    "SandboxUnavailable",
    "ToolCaller",
    "build_image",
    "container_environment",
    "containers_of",
    "engine_status",
    "remove_container",
    "ensure_sandbox",
    "kill_sandbox",
    "list_sandboxes",
    "sandbox_status",
    "supervision_tree",
]
