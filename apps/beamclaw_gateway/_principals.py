"""Who a request speaks for: its principal, decided by the server, never by the client.

A principal is a token's holder (``[gateway.auth.tokens.NAME]``, or the legacy
``[gateway.http] token``, an admin), or, when no token is configured on loopback, the
one local principal (admin, as before tokens had names). It carries a role and the
users and agents it may act as. A request names a user (the ``user`` field, the
``X-User-Id`` header, an A2A context, the MCP ``chat`` tool's ``user``); the server
turns that name into a user id *within the principal's reach* (`Principal.user_for`)
and refuses one outside it: a client can never speak as another client's user.

How a name becomes a user id:

- a principal that may act as anyone (an admin with no ``users`` list) keeps today's
  rule: ``alice`` is ``api:alice``, ``local:ada`` stays ``local:ada``;
- any other principal's bare names live under its own name: token ``web`` sending
  ``alice`` speaks as ``api:web/alice``, and with no user as ``api:web``; a namespaced
  id (``local:ada``) must match its ``users`` patterns;
- A2A contexts and MCP users are in their own namespaces, always under the principal's
  name, an admin's too: a remote agent chooses a context id and an MCP host's model a
  user, so neither may reach another principal's conversation (`beamclaw_a2a.Client`,
  `Principal.mcp_user`).
"""

from __future__ import annotations

import enum
import hmac
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final, TypeVar, final

import attrs
from loguru import logger

from beamclaw_obs import register_secret


@final
class Role(enum.IntEnum):
    """What a principal may do; each includes the ones below it."""

    #: Reads metadata: the agents, the supervision tree, metrics, the OpenAPI document.
    VIEWER = 1
    #: Chats (HTTP, WS, A2A, MCP) as its own users and answers its own approvals.
    OPERATOR = 2
    #: Everything, as any user.
    ADMIN = 3


class Forbidden(ValueError):
    """The principal may not do what the request asks; the message says what (an HTTP 403)."""


_View = TypeVar("_View", bound=Callable[..., object])
#: The attribute `needs` sets on a view function.
ROLE_ATTRIBUTE: Final = "beamclaw_role"


def needs(role: Role) -> Callable[[_View], _View]:
    """Mark a route with the least role it needs; the app checks it before the route runs
    (a route without the mark needs an operator, or a viewer for the read-only ones)."""

    def mark(view: _View) -> _View:
        setattr(view, ROLE_ATTRIBUTE, role)
        return view

    return mark


def _matches(value: str, patterns: Iterable[str]) -> bool:
    """Whether *value* is one of *patterns*: an exact id, or a prefix ending in ``*``."""
    for pattern in patterns:
        if pattern.endswith("*"):
            if value.startswith(pattern[:-1]):
                return True
        elif value == pattern:
            return True
    return False


@final
@attrs.frozen
class Principal:
    """A caller as the server knows it (see the module's docstring)."""

    name: str
    role: Role
    #: Patterns of the user ids it may act as; None: anyone.
    users: tuple[str, ...] | None
    #: Patterns of the agents it may talk to; None: every agent.
    agents: tuple[str, ...] | None = None

    @property
    def unscoped(self) -> bool:
        """Whether it may act as any user (and so keeps the unprefixed ``api:`` names)."""
        return self.users is None

    def may_act_as(self, user_id: str) -> bool:
        return self.users is None or _matches(user_id, self.users)

    def may_use(self, agent: str) -> bool:
        return self.agents is None or _matches(agent, self.agents)

    def check_role(self, needed: Role, what: str) -> None:
        if self.role < needed:
            raise Forbidden(f"{what} needs the {needed.name.lower()} role; this token is {self.role.name.lower()}")

    def check_user(self, user_id: str) -> str:
        """*user_id* if the principal may act as it; `Forbidden` otherwise."""
        if not self.may_act_as(user_id):
            raise Forbidden(f"this token may not act as user {user_id!r}")
        return user_id

    def check_agent(self, agent: str) -> str:
        if not self.may_use(agent):
            raise Forbidden(f"this token may not use agent {agent!r}")
        return agent

    def origin(self, channel: str) -> str:
        """Where a run of this principal comes from: only a ``/yes`` from the same origin
        answers an approval one of its runs asked for (another token acting as the same
        user, an admin among them, approves nothing with a chat message)."""
        return f"{channel}:{self.name}"

    def user_for(self, name: str | None) -> str:
        """The API user id a request's *name* stands for (unchecked: see `check_user`)."""
        if not name:
            if self.users is None:
                return "api:anonymous"
            own = f"api:{self.name}"
            exact = [pattern for pattern in self.users if not pattern.endswith("*")]
            return own if self.may_act_as(own) or not exact else exact[0]
        if ":" in name:
            return name
        return f"api:{name}" if self.unscoped else f"api:{self.name}/{name}"

    def mcp_user(self, name: str) -> str:
        """The user an MCP host's ``chat`` call speaks as: always one of this principal's
        own ``mcp:`` users (``mcp:NAME``, ``mcp:NAME/<name>``), whatever its role, since
        the host's model fills that argument (a prompt-injected host must not reach the
        owner's terminal conversation, another token's, or their approvals)."""
        own = f"mcp:{self.name}"
        if not name or name == own:
            return own
        if ":" not in name:
            return f"{own}/{name}"
        if name.startswith(own + "/"):
            return name
        raise Forbidden(f"the chat tool speaks only as {own} users, not as {name!r}")


#: The principal of every request when no token is configured (loopback only): the
#: machine's own user, as BeamClaw behaved before tokens had names.
LOCAL: Final = Principal("local", Role.ADMIN, None)


@attrs.define
class _TokenFile:
    """A token kept in a file, read again when the file changes (rotation without a restart)."""

    path: Path
    _seen: tuple[int, int, int, int] | None = None
    _value: str | None = None

    def value(self) -> str | None:
        try:
            stat = self.path.stat()
        except OSError:
            self._seen, self._value = None, None
            return None
        seen = (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        if seen != self._seen:
            if stat.st_mode & 0o077:
                logger.warning(
                    "the token file {} can be read by other users (mode {:o}): chmod 600 it",
                    self.path, stat.st_mode & 0o777,
                )  # fmt: skip
            try:
                text = self.path.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                text = ""
            self._seen, self._value = seen, text or None
            if text:
                register_secret(text)
        return self._value


@attrs.define
class TokenSource:
    """Where one token's value is read from at each request: an environment variable
    (replaced by ``beamclaw reload``) or a file (re-read when it changes)."""

    env: str | None = None
    file: _TokenFile | None = None
    _registered: str | None = None

    def value(self) -> str | None:
        if self.file is not None:
            return self.file.value()
        value = os.environ.get(self.env or "", "") or None
        if value is not None and value != self._registered:
            register_secret(value)
            self._registered = value
        return value


@attrs.define
class Principals:
    """The configured tokens and who holds each; `identify` answers a request's header."""

    tokens: list[tuple[TokenSource, Principal]]

    @property
    def open(self) -> bool:
        """No token configured: every (loopback) request is the `LOCAL` principal."""
        return not self.tokens

    def named(self, name: str) -> Principal | None:
        """The principal called *name* (`LOCAL` when no token is configured)."""
        if self.open:
            return LOCAL if name == LOCAL.name else None
        return next((principal for _, principal in self.tokens if principal.name == name), None)

    def identify(self, header: str | None) -> Principal | None:
        """The principal whose token the ``Authorization`` header carries, or None.

        Every configured token is compared, each in constant time, whichever matches.
        """
        if self.open:
            return LOCAL
        scheme, _, given = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return None
        offered = given.strip().encode()
        found = None
        for source, principal in self.tokens:
            value = source.value()
            if value is not None and hmac.compare_digest(offered, value.encode()) and found is None:
                found = principal
        return found
