"""The bubblewrap jail: a light, per-command jail for ``bash``, ``terminal`` and skill scripts.

Each command gets fresh user, pid, ipc, uts, cgroup and network namespaces (the network
only when ``[sandbox] network = "bridge"``), and a root that holds nothing but:

- ``/usr`` (and the ``/bin``, ``/sbin``, ``/lib*`` links or folders) read-only;
- a copy of the few files of ``/etc`` a shell and its tools need (`ETC_FILES`),
  read-only, with a ``/etc/passwd`` and ``/etc/group`` of its own: never
  ``/etc/shadow``, ssh host keys, TLS private keys or package-manager credentials (a
  copy, refreshed when a source changes, because one bind mount costs far less than
  thirty);
- its own ``/proc`` (of its pid namespace: no daemon, no other jail), a minimal ``/dev``,
  and a private, size-capped ``/tmp`` and ``/dev/shm``;
- the agent's workspace, read-write, at its own absolute path: the only writable place
  that outlives the command, but for the files and folders that shape the agent's prompt,
  bound read-only over it (see `_prompt_guard`);
- the folders the caller names read-only (the agent's skill folders).

The root itself is read-only. The data dir, the config, the control socket, other
agents' workspaces, ``$HOME``, ``/run`` and ``/var`` are not there at all.

bwrap is started with an empty environment (its pid 1 in the jail keeps the environ it
was started with, which any process there can read) and its arguments in a memfd
(``--args``), so ``/proc/1/cmdline`` shows the command and no host path; the command's environment is
the ``env_allowlist`` minus the ``env_blocklist``, with PATH, HOME and TMPDIR of the
jail's own. ``--new-session`` (no TIOCSTI into the daemon's terminal),
``--die-with-parent``, ``--disable-userns`` where bwrap has it, every capability
dropped, and the seccomp filter of `_seccomp` (compiled once, loaded by bwrap's
``--seccomp``; without libseccomp the jail refuses to run unless ``[sandbox.bubblewrap]
seccomp = false``). No Unix socket of the host is there: no path of one is bound in
(``ro_binds`` may not name /run, /var/run or /tmp), and abstract names belong to a
network namespace, the jail's own unless ``network = "bridge"``, where the filter
refuses ``socket(AF_UNIX)`` instead. Limits, set by the jail's first process before it runs the command, bind
every process in it: RLIMIT_NPROC (``pids_limit``; counted per user namespace, so only
the jail's own processes count; the kernel exempts root's processes from it, even in a
user namespace, so it holds only for a daemon run as an unprivileged user, as the
systemd unit runs it), RLIMIT_DATA (``memory_limit``: the heap and every
private mapping), RLIMIT_AS (four times that, a backstop that still lets JIT runtimes
reserve their address space), RLIMIT_CPU (the call's time limit times ``cpu_limit``),
RLIMIT_FSIZE (``[sandbox.bubblewrap] file_size_limit``) and no core dumps. When the
command ends or its time is up, bwrap is killed; its pid 1 dies with it, and with pid 1
the kernel kills every process of the namespace, so nothing is left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, final

import trio

from beamclaw_base import SYSTEM_PATH, JailResult, JailUnavailable, check_cwd, run_captured

from ._config import SandboxConfig
from ._prompt_guard import guarded_names
from ._seccomp import SeccompUnavailable, seccomp_program

#: What of /etc a jail sees, read-only (a name missing on this host is skipped).
ETC_FILES: Final = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "gai.conf",
    "host.conf",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "locale.conf",
    "localtime",
    "lsb-release",
    "magic",
    "magic.mime",
    "mime.types",
    "networks",
    "nsswitch.conf",
    "os-release",
    "pki/ca-trust/extracted",
    "pki/tls/certs",
    "profile",
    "protocols",
    "python3",
    "resolv.conf",
    "services",
    "shells",
    "ssl/certs",
    "ssl/openssl.cnf",
    "terminfo",
    "timezone",
)
#: The temp folder of a daemon's /etc copies is named this, its pid, and a random part.
ETC_COPY_PREFIX: Final = "beamclaw-jail-etc-"
#: The top-level system links or folders of a merged-/usr (or not) system.
_SYSTEM_DIRS: Final = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_PROBE_RETRY: Final = 30.0
_SECCOMP_HINT: Final = (
    "install libseccomp (Debian/Ubuntu: apt install libseccomp2; Fedora: dnf install libseccomp), or set "
    "[sandbox.bubblewrap] seccomp = false in config.toml to run the jail without its system call filter"
)
_INSTALL_HINT: Final = (
    "install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap), or set "
    '[tools.bash] isolation = "none" and [tools.terminal] isolation = "none" in config.toml to run the '
    "agent's commands unjailed on purpose"
)
#: The jail's first process: the limits, then the command (exec'd, so it is the same process).
_INIT: Final = 'ulimit -c 0 -u "$1" -d "$2" -v "$3" -t "$4" -f "$5" || exit 125; shift 5; exec "$@"'


def remove_stale_copies(folder: Path) -> list[Path]:
    """Remove the /etc copies in *folder* whose daemon is gone (a ``kill -9`` skips the
    ``atexit`` that removes its own); return them. Each copy's name holds its daemon's pid:
    one of this user's whose pid no process has now is stale."""
    removed = []
    for path in folder.glob(f"{ETC_COPY_PREFIX}*-*"):
        pid = path.name.removeprefix(ETC_COPY_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)) or path.is_symlink() or path.lstat().st_uid != os.getuid():
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


class _EtcCopy:
    """A private copy of the allowlisted part of /etc, bound as the jail's /etc.

    Checked before every command (a stat of each source) and copied again when one has
    changed (resolv.conf on a new network, say). A copy in use by a running jail is
    kept until the next copy replaces it, so no running command loses its files.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self._names = tuple(names)
        self._lock = trio.Lock()
        self._root: Path | None = None
        self._stamp: tuple[object, ...] | None = None
        self._current: Path | None = None
        self._previous: Path | None = None

    def _fingerprint(self) -> tuple[object, ...]:
        stamp: list[object] = []
        for name in self._names:
            try:
                st = os.stat(f"/etc/{name}")
            except OSError:
                stamp.append(None)
            else:
                stamp.append((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(stamp)

    async def path(self) -> Path:
        """The current copy, made again first (in a worker thread) if a source has changed."""
        async with self._lock:
            stamp = self._fingerprint()  # some thirty stats: cheap enough for the event loop
            if self._current is None or stamp != self._stamp:
                new = await trio.to_thread.run_sync(self._build)
                self._replace(new, stamp)
            assert self._current is not None
            return self._current

    def _build(self) -> Path:
        if self._root is None:
            remove_stale_copies(Path(tempfile.gettempdir()))
            self._root = Path(tempfile.mkdtemp(prefix=f"{ETC_COPY_PREFIX}{os.getpid()}-"))
            atexit.register(shutil.rmtree, self._root, ignore_errors=True)
        target = Path(tempfile.mkdtemp(dir=self._root))
        target.chmod(0o755)
        for name in self._names:
            source, dest = Path("/etc", name), target / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError, shutil.Error):  # gone, or unreadable: left out
                if source.is_dir():
                    shutil.copytree(source, dest, symlinks=True)
                elif source.is_file():
                    shutil.copyfile(source, dest)
                    dest.chmod(0o644)
        for name in ("passwd", "group"):  # what --ro-bind-data covers with the jail's own
            (target / name).touch(0o644)
        (target / "mtab").symlink_to("/proc/self/mounts")
        return target

    def _replace(self, new: Path, stamp: tuple[object, ...]) -> None:
        if self._previous is not None:
            shutil.rmtree(self._previous, ignore_errors=True)
        self._previous, self._current, self._stamp = self._current, new, stamp


def _passwd(uid: int, gid: int, home: str) -> tuple[bytes, bytes]:
    """A /etc/passwd and /etc/group naming only the jail's user, root and nobody."""
    name = "root" if uid == 0 else "agent"
    users = [f"{name}:x:{uid}:{gid}:BeamClaw agent:{home}:/bin/bash"]
    groups = [f"{name}:x:{gid}:"]
    if uid != 0:
        users.insert(0, "root:x:0:0:root:/root:/usr/sbin/nologin")
        groups.insert(0, "root:x:0:")
    users.append("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin")
    groups.append("nogroup:x:65534:")
    return ("\n".join(users) + "\n").encode(), ("\n".join(groups) + "\n").encode()


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)  # bwrap gets it through pass_fds alone
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


@final
class BubblewrapJail:
    """The `beamclaw_base.Jail` of ``isolation = "bubblewrap"``, configured by ``[sandbox]``.

    One instance serves every agent and session: it keeps nothing between commands but
    the result of its probe (whether bwrap can make its namespaces on this machine).
    """

    def __init__(self, config: SandboxConfig) -> None:
        self._config = config
        self._lock = trio.Lock()
        self._bwrap: str | None = None
        self._options: frozenset[str] = frozenset()
        self._problem: str | None = "not probed yet"
        self._probed_at: float | None = None
        self._etc = _EtcCopy(ETC_FILES)
        self._fixed: list[str] | None = None
        self._env: list[str] | None = None
        self._seccomp: bytes | None = None

    @property
    def backend(self) -> str:
        return "bubblewrap"

    @property
    def config(self) -> SandboxConfig:
        return self._config

    async def check(self) -> str | None:
        """None when bwrap is installed and can make its namespaces here; else why not and the fix.

        A success is remembered; a failure is probed again after 30 s, so installing
        bubblewrap needs no restart.
        """
        async with self._lock:
            now = trio.current_time()
            if self._probed_at is None or (self._problem is not None and now - self._probed_at > _PROBE_RETRY):
                self._problem = await self._probe()
                self._probed_at = now
            return self._problem

    def limits_warning(self) -> str | None:
        """What of the jail's limits does not hold on this machine (for ``doctor``), or None."""
        if os.geteuid() == 0:
            return (
                "BeamClaw runs as root: the kernel exempts root's processes from RLIMIT_NPROC, so "
                "[sandbox] pids_limit does not bind the jail (memory, CPU time, file size and the timeout "
                "still do); run BeamClaw as an unprivileged user"
            )
        return None

    async def _probe(self) -> str | None:
        wanted = self._config.bubblewrap.bwrap
        found = shutil.which(wanted) or shutil.which(wanted, path="/usr/bin:/bin:/usr/local/bin")
        if found is None:
            return f"bubblewrap is not installed (no {wanted!r} on PATH): {_INSTALL_HINT}"
        self._bwrap = found
        try:
            helped = await run_captured([found, "--help"], env={}, cwd="/", timeout=10.0, output_limit=65536)
        except OSError as exc:
            return f"bubblewrap ({found}) cannot be run: {exc}: {_INSTALL_HINT}"
        self._options = frozenset(word for word in helped.stdout.decode(errors="replace").split() if word[:2] == "--")
        if self._config.bubblewrap.seccomp:
            problem = self._load_seccomp(found)
            if problem is not None:
                return problem
        probe_dir = Path("/")
        try:
            result = await self._run_bwrap(["true"], workspace=None, cwd=probe_dir, timeout=10.0, output_limit=4096)
        except OSError as exc:
            return f"bubblewrap ({found}) cannot be run: {exc}: {_INSTALL_HINT}"
        if result.exit_code != 0:
            said = result.stderr.decode(errors="replace").strip().splitlines()
            return (
                f"bubblewrap ({found}) cannot make its namespaces here ({said[-1] if said else result.exit_code}): "
                "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 23.10 "
                "and later kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap; in a "
                'container, a seccomp profile that allows clone/unshare), or set [tools.bash] isolation = "none" '
                'and [tools.terminal] isolation = "none" in config.toml to run commands unjailed on purpose'
            )
        return None

    def _load_seccomp(self, bwrap: str) -> str | None:
        """Compile the filter of `_seccomp` (once: cached per daemon); None, or why not and the fix."""
        if "--seccomp" not in self._options:
            return f"bubblewrap ({bwrap}) is too old to load a seccomp filter (no --seccomp): {_SECCOMP_HINT}"
        try:
            self._seccomp = seccomp_program(unix_sockets=self._config.network != "bridge")
        except SeccompUnavailable as exc:
            return f"the jail's seccomp filter cannot be built ({exc}): {_SECCOMP_HINT}"
        return None

    async def run(
        self,
        argv: Sequence[str],
        *,
        workspace: Path,
        cwd: Path | None = None,
        timeout: float,
        output_limit: int,
        readonly: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
    ) -> JailResult:
        """Run *argv* in a new jail (see the module docstring); `JailUnavailable` if bwrap cannot work here."""
        if not argv:
            raise ValueError("argv is empty")
        workspace = Path(os.path.abspath(workspace))
        cwd = check_cwd(workspace, Path(os.path.abspath(cwd)) if cwd is not None else None)
        for folder in readonly:
            if workspace.is_relative_to(os.path.abspath(folder)):
                raise ValueError(f"readonly folder {str(folder)!r} holds the workspace; it would show its parents")
        problem = await self.check()
        if problem is not None:
            raise JailUnavailable(problem)
        limit = min(output_limit, self._config.max_output_bytes)
        return await self._run_bwrap(
            argv, workspace=workspace, cwd=cwd, timeout=timeout, output_limit=limit, readonly=readonly, env=env
        )

    async def _run_bwrap(
        self,
        argv: Sequence[str],
        *,
        workspace: Path | None,
        cwd: Path,
        timeout: float,
        output_limit: int,
        readonly: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
    ) -> JailResult:
        assert self._bwrap is not None
        home = str(workspace) if workspace is not None else "/"
        passwd, group = _passwd(os.getuid(), os.getgid(), home)
        fds = [_memfd("passwd", passwd), _memfd("group", group)]
        if self._seccomp is not None:
            fds.append(_memfd("seccomp", self._seccomp))
        try:
            etc = await self._etc.path()
            guarded = await trio.to_thread.run_sync(guarded_names, workspace) if workspace is not None else []
            options = self._options_for(
                workspace, cwd, readonly, etc, passwd_fd=fds[0], group_fd=fds[1], guarded=guarded, env=env
            )
            if self._seccomp is not None:
                options += ["--seccomp", str(fds[2])]
            args_fd = _memfd("bwrap-args", b"".join(arg.encode() + b"\0" for arg in options))
            fds.append(args_fd)
            command = ["/bin/bash", "-c", _INIT, "beamclaw-jail", *self._limits(timeout), *argv]
            return await run_captured(
                [self._bwrap, "--args", str(args_fd), "--", *command],
                env={},  # the jail's pid 1 keeps this environment: nothing of the daemon's
                cwd="/",
                timeout=timeout,
                output_limit=output_limit,
                pass_fds=fds,
            )
        finally:
            for fd in fds:
                os.close(fd)

    def _fixed_options(self) -> list[str]:
        """The options every jail shares: namespaces, the system, /proc, /dev, /tmp (made once)."""
        if self._fixed is not None:
            return self._fixed
        config = self._config
        # --unshare-all only tries a user namespace (and skips it when run as root): asked for explicitly.
        args = ["--unshare-all", "--unshare-user"]
        if config.network == "bridge":
            args.append("--share-net")
        if "--disable-userns" in self._options:
            args.append("--disable-userns")
        # No --hostname: sethostname is what systemd's ProtectHostname= and most seccomp
        # profiles refuse, and the uts namespace alone already keeps a change inside.
        # bwrap keeps every capability in the jail's namespaces unless told (seen: CapEff all
        # ones for a daemon run as root); none is needed to run a command.
        args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        args += ["--ro-bind", "/usr", "/usr"]
        for name in _SYSTEM_DIRS:
            path = Path("/", name)
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        # /proc read-only: a daemon run as root maps the jail's root to the host's, and the
        # kernel checks /proc/sys writes by owner and mode, not capabilities, so a writable
        # /proc/sys (kernel.core_pattern!) would be a way out of every namespace.
        args += ["--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev"]
        tmp_size = str(config.memory_bytes)
        for tmp in ("/tmp", "/dev/shm"):
            args += [*(["--size", tmp_size] if "--size" in self._options else []), "--tmpfs", tmp]
        # /dev is a tmpfs of its own: read-only once its nodes (their own mounts) are in.
        args += ["--remount-ro", "/dev", "--symlink", "/tmp", "/var/tmp"]
        for folder in config.bubblewrap.ro_binds:
            args += ["--ro-bind-try", os.path.realpath(folder), os.path.abspath(folder)]
        self._fixed = args
        return args

    def _fixed_environment(self) -> list[str]:
        """``--setenv`` pairs of what the command's environment shares in every jail (made once):
        the allowlisted part of the daemon's environment, with the jail's own PATH and TMPDIR."""
        if self._env is not None:
            return self._env
        env = self._config.filter_env(dict(os.environ))
        user = "root" if os.getuid() == 0 else "agent"
        env.update(PATH=SYSTEM_PATH, TMPDIR="/tmp", SHELL="/bin/bash", USER=user, LOGNAME=user)
        env.pop("HOME", None)
        env.setdefault("LANG", "C.UTF-8")
        self._env = [word for name, value in sorted(env.items()) for word in ("--setenv", name, value)]
        return self._env

    def _options_for(
        self, workspace: Path | None, cwd: Path, readonly: Sequence[Path], etc: Path, *, passwd_fd: int,
        group_fd: int, guarded: Sequence[str] = (), env: Mapping[str, str] | None = None,
    ) -> list[str]:  # fmt: skip
        """bwrap's options, given to it through ``--args`` (the command follows on its command line)."""
        args = [*self._fixed_options(), "--ro-bind", str(etc), "/etc"]
        args += ["--ro-bind-data", str(passwd_fd), "/etc/passwd", "--ro-bind-data", str(group_fd), "/etc/group"]
        for folder in readonly:
            dest = os.path.abspath(folder)
            if workspace is not None and Path(dest).is_relative_to(workspace):
                continue  # already there, and writable
            args += ["--ro-bind-try", os.path.realpath(folder), dest]
        if workspace is not None:
            real = os.path.realpath(workspace)
            args += ["--bind", real, str(workspace)]
            for name in guarded:  # read-only over the writable workspace: see `_prompt_guard`
                args += ["--ro-bind", os.path.join(real, name), str(workspace / name)]
        args += ["--remount-ro", "/", "--chdir", str(cwd), "--clearenv", *self._fixed_environment()]
        extra = [word for name, value in sorted((env or {}).items()) for word in ("--setenv", name, value)]
        return [*args, *extra, "--setenv", "HOME", str(workspace or "/")]

    def _limits(self, timeout: float) -> list[str]:
        """``ulimit`` values: processes, data and address space (KiB), CPU seconds, file size (KiB)."""
        config = self._config
        memory_kib = max(config.memory_bytes // 1024, 1)
        cpu_seconds = math.ceil(timeout * config.cpus) + 1
        return [
            str(config.pids_limit),
            str(memory_kib),
            str(memory_kib * 4),
            str(cpu_seconds),
            str(max(config.file_size_bytes // 1024, 1)),
        ]
