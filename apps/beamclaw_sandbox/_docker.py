"""The Docker engine, through the blocking ``docker`` SDK run in worker threads.

Every container this app makes is labelled: ``beamclaw.sandbox=1``, the daemon's
instance (a hash of its data dir, the same across restarts of the daemon) and its boot
(new at every start of the daemon). So the reaper can tell, after a ``kill -9``, which
containers were this daemon's and belong to no running sandbox any more, and never
touches another daemon's.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import threading
import time
from pathlib import Path
from typing import Any, Final, final

import attrs
import trio

LABEL_SANDBOX: Final = "beamclaw.sandbox"
LABEL_INSTANCE: Final = "beamclaw.instance"
LABEL_BOOT: Final = "beamclaw.boot"
LABEL_KEY: Final = "beamclaw.key"

#: Where the per-sandbox host directory (bridge socket, scripts) is mounted, read-only.
BRIDGE_DIR: Final = "/run/beamclaw"
#: The generated tool discovery tree (index.txt, <tool>/description.txt, <tool>/schema.json).
TOOLS_DIR: Final = "/tools"
#: Where the agent's workspace is mounted when ``workspace_mount`` is ro or rw.
WORKSPACE_DIR: Final = "/workspace"
#: The image's unprivileged user (sandbox-image/Dockerfile), as uid and gid.
SANDBOX_IDS: Final = (1000, 1000)
SANDBOX_USER: Final = f"{SANDBOX_IDS[0]}:{SANDBOX_IDS[1]}"


def container_ids() -> tuple[int, int]:
    """The uid and gid of the container's processes: the daemon's own, so files they write
    in a ``rw`` workspace are the daemon's, as with the bubblewrap jail; never root: a
    daemon running as root gets the image's unprivileged user (which can then write
    only where that uid may, and is given what the container must reach)."""
    uid, gid = os.getuid(), os.getgid()
    return SANDBOX_IDS if uid == 0 else (uid, gid)


def container_user() -> str:
    """`container_ids` as Docker's ``user`` option, ``uid:gid``."""
    uid, gid = container_ids()
    return f"{uid}:{gid}"


#: Fixed inside the container whatever the host's values: the host's PATH and HOME mean nothing there.
CONTAINER_ENV: Final = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "BEAMCLAW_BRIDGE_SOCKET": f"{BRIDGE_DIR}/bridge.sock",
}
#: The private /tmp: writable, never executable from setuid files, counted in the memory limit.
TMPFS_OPTIONS: Final = "rw,nosuid,nodev,size=64m,mode=1777"


class EngineUnavailable(RuntimeError):
    """The Docker engine does not answer (not installed, not started, or no permission)."""


class ImageMissing(LookupError):
    """The sandbox image is not in the engine (it is built locally, never pulled)."""


def instance_id(data_dir: Path) -> str:
    """This daemon's instance: the same for every start on *data_dir*, different for another."""
    return hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:12]


def new_boot_id() -> str:
    """One start of the daemon."""
    return secrets.token_hex(6)


@final
@attrs.frozen
class Mount:
    source: Path
    target: str
    read_only: bool = True


@final
@attrs.frozen
class ContainerSpec:
    """One sandbox container: the reference's flags, with this sandbox's limits and mounts."""

    name: str
    image: str
    labels: dict[str, str]
    environment: dict[str, str]
    mounts: tuple[Mount, ...]
    memory_bytes: int
    cpus: float
    pids_limit: int
    network: str = "none"
    working_dir: str = "/tmp"
    user: str = SANDBOX_USER
    #: The container's command: a warm sandbox sleeps and is exec'd into; a jail runs one command.
    command: tuple[str, ...] = ("sleep", "infinity")

    def run_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``client.containers.run``."""
        return {
            "command": list(self.command),
            "name": self.name,
            "detach": True,
            # tini as pid 1 reaps what scripts leave behind, so zombies never fill pids_limit.
            "init": True,
            "labels": self.labels,
            "environment": self.environment,
            "user": self.user,
            "working_dir": self.working_dir,
            "network_mode": self.network,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "read_only": True,
            "tmpfs": {"/tmp": TMPFS_OPTIONS},
            "mem_limit": self.memory_bytes,
            "memswap_limit": self.memory_bytes,  # no swap beyond the limit
            "nano_cpus": int(self.cpus * 1e9),
            "pids_limit": self.pids_limit,
            "volumes": {str(m.source): {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in self.mounts},
        }


@final
@attrs.frozen
class ExecOutput:
    exit_code: int
    stdout: bytes
    stderr: bytes
    truncated: bool


@final
@attrs.frozen
class ContainerInfo:
    name: str
    status: str
    labels: dict[str, str]
    created: float  # seconds since the epoch

    def label(self, key: str) -> str:
        return self.labels.get(key, "")


def local_socket_refuses(base_url: str | None) -> str | None:
    """Why the engine's Unix socket cannot answer (missing, refused), or None when it may.

    Asked before the SDK connects: the SDK's Unix connection leaves its socket open when
    the connect fails (to be found by the garbage collector), so a host without a running
    engine is told here, with a socket that is always closed.
    """
    url = base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if not url.startswith(("unix://", "http+unix://")):
        return None
    path = url.split("://", 1)[1]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(5)
        try:
            probe.connect(path)
        except OSError as exc:
            return f"{path}: {exc.strerror or exc}"
    return None


@final
class DockerEngine:
    """The engine at *base_url* (default: the environment's ``DOCKER_HOST`` or the local socket).

    The client is made on first use, so building the tree never touches the engine.
    Every method runs the SDK in a worker thread and raises `EngineUnavailable` when
    the engine cannot be reached.
    """

    def __init__(self, base_url: str | None = None) -> None:
        self.base_url = base_url
        self._client: Any = None
        self._lock = threading.Lock()  # worker threads connect at most once between them

    def _connect(self) -> Any:
        docker = _sdk()
        with self._lock:
            if self._client is not None:
                return self._client
            refused = local_socket_refuses(self.base_url)
            if refused is not None:
                raise EngineUnavailable(f"the Docker engine does not answer: {refused}")
            try:
                client = docker.DockerClient(base_url=self.base_url) if self.base_url else docker.from_env()
                client.ping()
            except docker.errors.DockerException as exc:
                raise EngineUnavailable(f"the Docker engine does not answer: {exc}") from None
            self._client = client
            return client

    async def _run(self, function: Any, *args: Any, abandon_on_cancel: bool = False) -> Any:
        docker = _sdk()

        def call() -> Any:
            client = self._connect()
            try:
                return function(client, *args)
            except (docker.errors.DockerException, OSError) as exc:
                if isinstance(exc, docker.errors.APIError) and exc.response is not None:
                    raise
                raise EngineUnavailable(f"the Docker engine does not answer: {exc}") from None

        return await trio.to_thread.run_sync(call, abandon_on_cancel=abandon_on_cancel)

    async def ping(self) -> bool:
        """Whether the engine answers."""
        try:
            await self._run(lambda client: client.ping())
        except EngineUnavailable:
            return False
        return True

    async def version(self) -> dict[str, Any]:
        info: dict[str, Any] = await self._run(lambda client: client.version())
        return info

    async def image_exists(self, image: str) -> bool:
        docker = _sdk()

        def exists(client: Any) -> bool:
            try:
                client.images.get(image)
            except docker.errors.ImageNotFound:
                return False
            return True

        found: bool = await self._run(exists)
        return found

    async def run(self, spec: ContainerSpec) -> str:
        """Create and start the container; its id. Raises `ImageMissing` without pulling."""

        docker = _sdk()

        def run(client: Any) -> str:
            # Looked up first: `containers.run` would try to pull a missing image, and no
            # registry may be reachable (the image is built locally).
            try:
                client.images.get(spec.image)
            except docker.errors.ImageNotFound:
                raise ImageMissing(f"the sandbox image {spec.image} is not built") from None
            container = client.containers.run(spec.image, **spec.run_kwargs())
            return str(container.id)

        container_id: str = await self._run(run)
        return container_id

    async def run_to_exit(self, spec: ContainerSpec, timeout: float) -> tuple[int | None, bytes, bytes]:
        """Run *spec*'s command in a new container, wait for it (at most *timeout* seconds),
        and remove the container; its exit status (None if it had to be stopped), stdout
        and stderr."""
        docker = _sdk()

        def run(client: Any) -> tuple[int | None, bytes, bytes]:
            try:
                client.images.get(spec.image)
            except docker.errors.ImageNotFound:
                raise ImageMissing(f"the sandbox image {spec.image} is not built") from None
            container = client.containers.run(spec.image, **spec.run_kwargs())
            try:
                try:
                    code: int | None = int(container.wait(timeout=timeout)["StatusCode"])
                except OSError:  # requests' read time-out: the command outlived its limit
                    container.kill()
                    code = None
                return code, container.logs(stdout=True, stderr=False), container.logs(stdout=False, stderr=True)
            finally:
                container.remove(force=True)

        result: tuple[int | None, bytes, bytes] = await self._run(run)
        return result

    async def exec(
        self, name: str, command: list[str], *, environment: dict[str, str] | None = None, workdir: str | None = None,
        max_output_bytes: int = 1 << 20, abandon_on_cancel: bool = False,
    ) -> ExecOutput:  # fmt: skip
        """Run *command* in the container and wait for it; stdout and stderr kept up to
        *max_output_bytes* together (the rest is read and dropped, so the command is never
        blocked on a full pipe). With *abandon_on_cancel*, a cancelled wait returns at
        once and leaves the worker thread to finish on its own."""
        docker = _sdk()

        def run(client: Any) -> ExecOutput:
            api = client.api
            exec_id = api.exec_create(name, command, environment=environment, workdir=workdir)["Id"]
            out, err = bytearray(), bytearray()
            truncated = False
            # The raw socket rather than stream=True: the SDK's stream never closes its
            # connection; this one is closed here however the read ends.
            sock = api.exec_start(exec_id, socket=True)
            try:
                for stream, chunk in docker.utils.socket.frames_iter(sock, False):
                    room = max_output_bytes - len(out) - len(err)
                    if len(chunk) > room:
                        truncated = True
                    (err if stream == docker.utils.socket.STDERR else out).extend(chunk[: max(room, 0)])
            finally:
                _close(sock)
            exit_code = api.exec_inspect(exec_id)["ExitCode"]
            return ExecOutput(-1 if exit_code is None else int(exit_code), bytes(out), bytes(err), truncated)

        output: ExecOutput = await self._run(run, abandon_on_cancel=abandon_on_cancel)
        return output

    async def remove(self, name: str) -> bool:
        """Force-remove the container *name* (and its anonymous volumes); whether it existed."""
        docker = _sdk()

        def remove(client: Any) -> bool:
            try:
                client.api.remove_container(name, force=True, v=True)
            except docker.errors.NotFound:
                return False
            except docker.errors.APIError as exc:
                if exc.status_code == 409:  # removal already in progress
                    return False
                raise
            return True

        removed: bool = await self._run(remove)
        return removed

    async def containers(self, labels: dict[str, str]) -> list[ContainerInfo]:
        """Every container (running or not) carrying all of *labels*."""

        def listing(client: Any) -> list[ContainerInfo]:
            filters = {"label": [f"{k}={v}" for k, v in labels.items()]}
            return [
                ContainerInfo(
                    str(c["Names"][0]).lstrip("/") if c.get("Names") else str(c["Id"]),
                    str(c.get("State", "")),
                    dict(c.get("Labels") or {}),
                    float(c.get("Created", time.time())),
                )
                for c in client.api.containers(all=True, filters=filters)
            ]

        found: list[ContainerInfo] = await self._run(listing)
        return found

    async def inspect(self, name: str) -> dict[str, Any]:
        """The container as ``docker inspect`` shows it."""
        inspected: dict[str, Any] = await self._run(lambda client: client.api.inspect_container(name))
        return inspected

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _sdk() -> Any:
    """The docker SDK, imported on first use: with requests it costs 200 ms, which the
    daemon and the CLI should not pay when no container is ever run."""
    import docker  # noqa: PLC0415

    return docker


def _close(sock: Any) -> None:
    """Close an attach socket: the file object the SDK returns and the socket under it."""
    raw = getattr(sock, "_sock", None)
    sock.close()
    if raw is not None:
        raw.close()
