"""``Idempotency-Key`` on the chat route: a client that sends one message again (a retry
after a timeout, through another node) never gets two turns out of it.

The key is the client's, scoped by the principal that sent it (two tokens never share a
key), and kept with a hash of the request, in the gateway's store (``gateway.db``, or
PostgreSQL, so every node sees every key). What a request with a key that is known gets,
as the IETF draft (draft-ietf-httpapi-idempotency-key-header) says:

- another request under the key (a different body or user): 422;
- the first request is still running: 409, with Retry-After;
- the first request was answered: its answer again, as it was (a 200, or a 4xx);
- the first request was cut (its node died, or the client went away mid-stream and
  the route with it): the answer from the conversation's history, which the new owner
  repaired: the agent's reply to the message if it was made, else a notice that the
  turn was interrupted. Never a second model call.

A key is checked on the conversation's owner (a request for a conversation another node
owns is forwarded there first, the header with it), so "still running" is a question
only the owner answers, from its own memory of the requests it is serving
(`Running`): a started key that no request of this node holds was cut, and is
answered from the history once the conversation runs no turn (until then, 409: its
turn goes on after its client or forwarding node went away).

A failure worth retrying (a 5xx, a 429) keeps no key: the client's retry runs the turn.
Keys are kept 24 hours (`KEEP_SECONDS`); each new key deletes the expired ones. The
key is marked before the message is handed to the conversation, in its own
transaction: a node that dies between the two leaves a started key and no message,
which a retry answers as interrupted.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

import attrs

from beamclaw_base import Step, Tx

HEADER: Final = "Idempotency-Key"
#: How long a key is kept, in seconds (the draft leaves it to the server; a day covers retries).
KEEP_SECONDS: Final = 24 * 3600.0
#: The longest key accepted (a UUID is 36 characters).
MAX_KEY: Final = 255

#: The keys' table (a version of the gateway's schema).
STEP: Final = Step(
    sqlite="""
CREATE TABLE IF NOT EXISTS idempotency_keys (principal TEXT NOT NULL, key TEXT NOT NULL,
    request_hash TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('started', 'done')), response TEXT,
    owner TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (principal, key));
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys(created_at);
""",
    postgres="""
CREATE TABLE IF NOT EXISTS idempotency_keys (principal TEXT NOT NULL, key TEXT NOT NULL,
    request_hash TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('started', 'done')), response TEXT,
    owner TEXT NOT NULL, created_at double precision NOT NULL, PRIMARY KEY (principal, key));
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys(created_at);
""",
)


class BadKey(ValueError):
    """The header's value is not a key this server takes."""


def checked_key(value: str) -> str:
    """*value* as a key: 1 to `MAX_KEY` printable ASCII characters; `BadKey` otherwise."""
    if not 1 <= len(value) <= MAX_KEY or not value.isascii() or not value.isprintable():
        raise BadKey(f"the {HEADER} header must be 1 to {MAX_KEY} printable ASCII characters (a UUID, say)")
    return value


def request_hash(body: dict[str, Any], user_header: str | None) -> str:
    """What makes two requests the same: the body (parsed: the order of its keys and its
    spacing do not count) and the ``X-User-Id`` header it may be read with."""
    text = json.dumps([body, user_header], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


@attrs.frozen
class Answer:
    """An HTTP answer as it is kept, to be given again."""

    status: int
    content_type: str
    body: str

    def to_json(self) -> str:
        return json.dumps(attrs.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Answer:
        return cls(**json.loads(text))

    @property
    def kept(self) -> bool:
        """Whether a retry gets this answer again (a failure worth retrying is not kept)."""
        return self.status < 500 and self.status != 429


@attrs.frozen
class Known:
    """A key seen before: the hash of its request, and its answer once it has one."""

    request_hash: str
    answer: Answer | None


def claim(tx: Tx, principal: str, key: str, digest: str, *, owner: str, now: float) -> Known | None:
    """Mark the key started for this request (None), or what is known of it already."""
    tx.execute("DELETE FROM idempotency_keys WHERE created_at < ?", (now - KEEP_SECONDS,))
    added = tx.execute(
        "INSERT INTO idempotency_keys (principal, key, request_hash, state, owner, created_at) "
        "VALUES (?, ?, ?, 'started', ?, ?) ON CONFLICT (principal, key) DO NOTHING RETURNING 1",
        (principal, key, digest, owner, now),
    ).fetchone()
    if added is not None:
        return None
    found, state, response = tx.execute(
        "SELECT request_hash, state, response FROM idempotency_keys WHERE principal = ? AND key = ?", (principal, key)
    ).fetchone()
    return Known(found, Answer.from_json(response) if state == "done" else None)


def finish(tx: Tx, principal: str, key: str, answer: Answer) -> None:
    """Keep *answer* for the key, or forget the key when a retry should run the turn again."""
    if answer.kept:
        tx.execute(
            "UPDATE idempotency_keys SET state = 'done', response = ? WHERE principal = ? AND key = ?",
            (answer.to_json(), principal, key),
        )
    else:
        tx.execute(
            "DELETE FROM idempotency_keys WHERE principal = ? AND key = ? AND state = 'started'", (principal, key)
        )


@attrs.define
class Running:
    """The keys whose requests this node is serving now (held by the routes of one app)."""

    keys: set[tuple[str, str]] = attrs.field(factory=set)

    def take(self, principal: str, key: str) -> bool:
        """Hold the key for a request; False when another request of this node holds it."""
        if (principal, key) in self.keys:
            return False
        self.keys.add((principal, key))
        return True

    def drop(self, principal: str, key: str) -> None:
        self.keys.discard((principal, key))
