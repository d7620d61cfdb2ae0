"""`beamclaw sandbox status|list|kill ID|build`: the Docker sandbox, straight from the engine.

No daemon is needed: containers are found by the label of this data dir, so ``list``
and ``kill`` also reach what a crashed daemon left behind.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any, Final

import beamclaw

if TYPE_CHECKING:
    import beamclaw_sandbox as sandbox

from ._help import Commands, Help, add_group
from ._listing import Column, add_json_option, print_json, print_table, wants_json
from ._terminal_safe import visible


def _config(args: argparse.Namespace) -> sandbox.SandboxConfig:
    import beamclaw_sandbox as sandbox

    return sandbox.parse_sandbox_config(beamclaw.load_config(args.config).get("sandbox", {}))


async def _status(args: argparse.Namespace, engine: sandbox.DockerEngine) -> int:
    import beamclaw_sandbox as sandbox

    status = await sandbox.engine_status(_config(args), beamclaw.data_dir(), engine)
    engine_line = f"Docker {status['engine']}" if status["engine"] else "no Docker engine answers"
    print(f"sandbox: {'enabled' if status['enabled'] else 'disabled'}, scope {status['scope']}, {engine_line}")
    if status["engine"]:
        print(f"image {status['image']}: {'built' if status['image_built'] else 'not built'}")
        print(f"containers of this data dir: {status['containers']}")
    if "problem" in status:
        print(visible(f"! {status['problem']}"))  # may quote the engine's answer
        return 1
    return 0


async def _list(args: argparse.Namespace, engine: sandbox.DockerEngine) -> int:
    import beamclaw_sandbox as sandbox

    found = sorted(await sandbox.containers_of(beamclaw.data_dir(), engine), key=lambda c: c.created)
    if wants_json(args):
        print_json([{"name": c.name, "key": c.label("beamclaw.key"), "status": c.status, "created": c.created}
                    for c in found])  # fmt: skip
        return 0
    if not found:
        print("no sandbox containers for this data dir")
        return 0
    now = time.time()
    print_table(
        [Column("NAME", whole=True), Column("KEY", whole=True), Column("STATUS"), Column("AGE", right=True)],
        [(c.name, c.label("beamclaw.key"), c.status, _age(now - c.created)) for c in found],
    )
    return 0


async def _kill(args: argparse.Namespace, engine: sandbox.DockerEngine) -> int:
    import beamclaw_sandbox as sandbox

    name = await sandbox.remove_container(beamclaw.data_dir(), args.id, engine)
    if name is None:
        print(f"beamclaw: no sandbox container {args.id!r} for this data dir (see `beamclaw sandbox list`)")
        return 1
    print(f"removed {name}")
    return 0


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


_ENGINE_COMMANDS: dict[str, Any] = {"status": _status, "list": _list, "kill": _kill}


_HELP: Final = Help(
    "the Docker sandbox: status, list, kill ID, build",
    "The Docker sandbox of the `exec` tool (no daemon needed). Without an action, its status.",
    ["beamclaw sandbox", "beamclaw sandbox build", "beamclaw sandbox list"],
)
_ACTIONS: Final = {
    "status": Help("is the engine up, the image built, Docker code execution on", "Say whether the Docker engine "
                   "answers, the image is built and up to date, and code execution is enabled.",
                   ["beamclaw sandbox status"]),
    "list": Help("the sandbox containers of this data dir", "List the sandbox containers of this data dir.",
                 ["beamclaw sandbox list"]),
    "kill": Help("remove a sandbox container (by name or key, e.g. session:<id>)", "Remove a sandbox container.",
                 ["beamclaw sandbox kill session:3f9a1c2b"]),
    "build": Help("build the sandbox image (no image registry needed; a no-op when up to date)", "Build the "
                  "sandbox image from sandbox-image/ (a debootstrap base; no image registry needed).",
                  ["beamclaw sandbox build", "beamclaw sandbox build --force"]),
}  # fmt: skip


def add_parser(commands: Commands) -> None:
    for action, parser in add_group(commands, "sandbox", _HELP, _ACTIONS).items():
        parser.add_argument("--config", metavar="PATH", help="configuration file")
        if action == "list":
            add_json_option(parser)
        if action == "kill":
            parser.add_argument("id", help="container name or key")
        if action == "build":
            parser.add_argument("--force", action="store_true", help="rebuild even when up to date")


def run(args: argparse.Namespace) -> int:
    import trio

    import beamclaw_sandbox as sandbox

    if args.action is None:
        args = argparse.Namespace(action="status", config=None)
    if args.action == "build":
        try:
            return sandbox.build_image(_config(args).docker_image, force=args.force)
        except FileNotFoundError as exc:
            print(f"beamclaw: {exc}")
            return 1
    engine = sandbox.DockerEngine()

    async def main() -> int:
        code: int = await _ENGINE_COMMANDS[args.action](args, engine)
        return code

    try:
        return trio.run(main)
    except sandbox.EngineUnavailable as exc:
        print(f"beamclaw: {exc}: install Docker (docker.io) and start dockerd")
        return 1
    finally:
        engine.close()
