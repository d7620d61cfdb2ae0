"""A key registry: many processes under keys of your choosing (Elixir's Registry).

The name registry holds one string per process; a session supervisor needs to find
one of thousands of processes by session id, and a channel may want every process
under one key. Entries go away when their process exits.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from typing import Any, Final, final

import attrs

from ._errors import AlreadyRegistered
from ._process import Dest, Pid, Process, name_registered, node, resolve_live
from ._process import self as current_pid


@final
class Keys(enum.Enum):
    UNIQUE = "unique"
    DUPLICATE = "duplicate"


UNIQUE: Final = Keys.UNIQUE
DUPLICATE: Final = Keys.DUPLICATE


@final
@attrs.frozen
class ViaName:
    """A name in a registry, usable wherever a destination or a child's name is."""

    registry: Registry
    key: Hashable

    def whereis(self) -> Pid | None:
        return self.registry.whereis(self.key)

    def register(self, pid: Pid) -> None:
        self.registry.register(self.key, pid=pid)


@final
class Registry:
    """Keys to processes, unique or duplicate, cleaned up when the processes exit."""

    def __init__(self, keys: Keys = UNIQUE, name: str | None = None) -> None:
        if not isinstance(keys, Keys):
            raise TypeError(f"keys must be sv.UNIQUE or sv.DUPLICATE, got {keys!r}")
        self.keys = keys
        self.name = name
        self._entries: dict[Hashable, dict[Process, Any]] = {}
        #: Each process's keys: a list (one or two keys; an empty set takes 216 bytes).
        self._owned: dict[Process, list[Hashable]] = {}

    def __repr__(self) -> str:
        return f"<Registry {self.name or hex(id(self))} {self.keys.value}, {len(self._entries)} keys>"

    def __len__(self) -> int:
        return len(self._entries)

    def register(self, key: Hashable, value: Any = None, *, pid: Dest | None = None) -> None:
        """Put *pid* (default: the caller) under *key* with *value*.

        In a unique registry a key held by a live process raises `AlreadyRegistered`.
        """
        proc = resolve_live(pid if pid is not None else current_pid())
        entries = self._entries.setdefault(key, {})
        if self.keys is UNIQUE and entries and proc not in entries:
            holder = next(iter(entries))
            raise AlreadyRegistered(f"key {key!r} is already registered to {holder.pid!r}")
        entries[proc] = value
        owned = self._owned.get(proc)
        if owned is None:
            owned = self._owned[proc] = []
            proc.exit_hooks.append(self._forget)
        if key not in owned:
            owned.append(key)
        if node().name_waiters:  # someone may wait for this key through a via name
            name_registered(ViaName(self, key))

    def unregister(self, key: Hashable, *, pid: Dest | None = None) -> None:
        """Remove *pid* (default: the caller) from *key*."""
        proc = resolve_live(pid if pid is not None else current_pid())
        entries = self._entries.get(key)
        if entries is None or proc not in entries:
            return
        del entries[proc]
        if not entries:
            del self._entries[key]
        self._owned[proc].remove(key)

    def lookup(self, key: Hashable) -> list[tuple[Pid, Any]]:
        """Every (pid, value) under *key*, in registration order."""
        return [(proc.pid, value) for proc, value in self._entries.get(key, {}).items()]

    def whereis(self, key: Hashable) -> Pid | None:
        """The pid under *key* in a unique registry, or None."""
        entries = self._entries.get(key)
        if not entries:
            return None
        return next(iter(entries)).pid

    def keys_of(self, pid: Dest) -> list[Hashable]:
        """The keys *pid* is registered under."""
        proc = resolve_live(pid)
        return list(self._owned.get(proc, ()))

    def via(self, key: Hashable) -> ViaName:
        """A destination for `call`, `cast`, `send` and a `ChildSpec` name."""
        return ViaName(self, key)

    def _forget(self, proc: Process) -> None:
        for key in self._owned.pop(proc, ()):
            entries = self._entries.get(key)
            if entries is not None:
                entries.pop(proc, None)
                if not entries:
                    del self._entries[key]
