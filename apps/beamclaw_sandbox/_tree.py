"""The sandbox app's tree.

    beamclaw_sandbox (one_for_one)
    ├── jails      (permanent): the jails the agent loop gives bash and terminal (always;
    │                           the Docker jail too when Docker is enabled)
    ├── registry   (permanent): scope key -> sandbox, the only starter, one PII tokenizer per key
    ├── sandboxes  (dynamic):   one transient `Sandbox` per container
    ├── reaper     (permanent): orphaned containers after a kill -9, idle sandboxes
    └── tools      (permanent): registers `exec` with the tool registry, again after its restarts

The Docker part runs only with ``[sandbox] enabled = true`` (opt-in, as in the
reference), which also offers ``[tools.bash] isolation = "docker"`` its jail; the
``jails`` process, which hands the agent loop the bubblewrap jail of ``bash`` and
``terminal``, runs either way.
Building the tree never touches the engine: a daemon whose Docker engine is down
starts, and ``exec`` says what is wrong when it is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import supervision as sv
from beamclaw_tools import keep_registered

from ._config import parse_sandbox_config
from ._docker_jail import DockerJail
from ._exec_tool import ExecTool
from ._jails import jail_server
from ._reaper import reaper
from ._registry import SandboxRegistry
from ._runtime import SANDBOXES, SandboxRuntime


def supervision_tree(table: dict[str, Any], data_dir: Path) -> sv.Supervisor:
    config = parse_sandbox_config(table)  # a bad table stops the daemon at start, naming the key
    if not config.enabled:
        # Always: the jails of bash and terminal (bubblewrap; Docker is opt-in).
        return sv.Supervisor([jail_server(config)], strategy=sv.ONE_FOR_ONE, intensity=10, period=10.0,
                             name="beamclaw_sandbox")  # fmt: skip
    runtime = SandboxRuntime.create(config, data_dir)
    docker_jail = DockerJail(runtime)  # one for every session: each command gets its own container
    children = [
        jail_server(config, {"docker": lambda _session: docker_jail}),
        sv.ChildSpec("registry", SandboxRegistry.start, args=(runtime,)),
        # Each sandbox restarts alone (a new container); many crashing at once point
        # at the engine, and the app restarts whole.
        sv.DynamicSupervisor(intensity=20, period=10.0, name=SANDBOXES).child_spec("sandboxes"),
        sv.ChildSpec("reaper", reaper, args=(runtime,)),
        keep_registered("tools", [ExecTool(config)]),
    ]
    return sv.Supervisor(children, strategy=sv.ONE_FOR_ONE, intensity=10, period=10.0, name="beamclaw_sandbox")
