"""A request for a conversation another node owns, passed on to that node and answered from it.

The client never needs to know: any node takes any request (no sticky sessions), and the
one that does not own the conversation forwards the same method, path and body to the
owner's advertised URL, signed for the principal it identified (`beamclaw_cluster.
signed_headers`), and streams the owner's answer back as it comes. A forwarded request
is never forwarded again: an owner that finds the conversation moved once more answers
503, and the client's retry finds the new owner.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import attrs
import httpx
import trio
from loguru import logger
from quart import Response, request, websocket

import beamclaw_cluster as cluster
from beamclaw_base import StoreError

from ._principals import Principal
from ._request_models import CHAT_PATH

#: The client's headers the owner needs to answer as this node would.
_PASSED_ON: Final = ("Content-Type", "Accept", "X-User-Id", "Idempotency-Key", "Host", "Origin")
#: The owner's headers the client gets back.
_PASSED_BACK: Final = ("Content-Type", "Cache-Control", "Retry-After", "WWW-Authenticate")
#: Waiting for the owner to connect; its answer (a long turn, a stream) is waited for as long as it takes.
_CONNECT_SECONDS: Final = 5.0


class OwnerUnreachable(Exception):
    """The owner node does not answer: its lease will end, and a retry takes the conversation over."""

    def __init__(self, where: cluster.Elsewhere, lease_seconds: float, why: str) -> None:
        super().__init__(f"node {where.node_id}, which serves this conversation, does not answer ({why}); retry soon")
        self.retry_after = max(1, round(lease_seconds))


async def _while_owner(
    where: cluster.Elsewhere, member: cluster.Membership, call: Callable[[], Awaitable[httpx.Response]]
) -> httpx.Response:
    """``await call()``, given up (`OwnerUnreachable`) once the owner no longer lives or owns
    the conversation: a node frozen or cut off after it accepted the request would be
    waited for for ever, while the conversation is taken over after its lease."""
    answer: list[httpx.Response] = []
    failure: list[httpx.TransportError] = []

    async def ask() -> None:
        try:
            answer.append(await call())
        except httpx.TransportError as exc:  # raised outside the nursery, not inside a group
            failure.append(exc)
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        while True:
            await trio.sleep(member.lease_seconds / 3)
            try:
                owner = await member.database.run(lambda tx: cluster.still_owner(tx, where), write=False)
            except StoreError:
                continue  # the store is away: the owner may well be alive
            if not owner:
                nursery.cancel_scope.cancel()
                break
    if failure:
        raise failure[0]
    if not answer:
        raise OwnerUnreachable(where, member.lease_seconds, "it died or lost the conversation meanwhile")
    return answer[0]


async def forward(where: cluster.Elsewhere, member: cluster.Membership, who: Principal) -> Response:
    """The owner's answer to this request, made for *who*; `OwnerUnreachable` if it cannot be had."""
    body = await request.get_data(True, False, False)
    path = request.full_path.rstrip("?")
    headers = {name: request.headers[name] for name in _PASSED_ON if name in request.headers}
    headers |= cluster.signed_headers(
        member.secret, member.node_id, who.name, cluster.Forwarded(request.method, path, body), time.time()
    )
    client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=_CONNECT_SECONDS), trust_env=False)
    url = where.advertise_url.rstrip("/") + path
    sent = client.build_request(request.method, url, content=body, headers=headers)
    try:
        answer = await _while_owner(where, member, lambda: client.send(sent, stream=True))
    except httpx.TransportError as exc:
        await client.aclose()
        raise OwnerUnreachable(where, member.lease_seconds, type(exc).__name__) from None
    except OwnerUnreachable:
        await client.aclose()
        raise
    logger.debug("forwarded {} {} to node {}: {}", request.method, path, where.node_id, answer.status_code)

    async def relayed() -> AsyncIterator[bytes]:
        try:
            async for chunk in answer.aiter_raw():
                yield chunk
        finally:
            await answer.aclose()
            await client.aclose()

    response = Response(relayed(), status=answer.status_code)
    for name in _PASSED_BACK:
        if name in answer.headers:
            response.headers[name] = answer.headers[name]
    response.timeout = None  # a long turn is not a stuck response
    return response


async def forward_turn(
    where: cluster.Elsewhere, member: cluster.Membership, who: Principal, turn: ForwardedTurn
) -> AsyncIterator[str]:
    """One turn of a conversation the node at *where* owns, asked of it as a streamed chat
    completion for *who* (a WebSocket's message): the answer's text as it comes.

    Raises `OwnerUnreachable`, or `TurnRefused` with the owner's error message.
    """
    body = json.dumps({"model": turn.agent, "user": turn.user, "stream": True,
                       "messages": [{"role": "user", "content": turn.text}]}).encode()  # fmt: skip
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if "Host" in websocket.headers:
        headers["Host"] = websocket.headers["Host"]
    headers |= cluster.signed_headers(
        member.secret, member.node_id, who.name, cluster.Forwarded("POST", CHAT_PATH, body), time.time()
    )
    async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=_CONNECT_SECONDS), trust_env=False) as client:
        sent = client.build_request("POST", where.advertise_url.rstrip("/") + CHAT_PATH, content=body, headers=headers)
        try:
            answer = await _while_owner(where, member, lambda: client.send(sent, stream=True))
        except httpx.TransportError as exc:
            raise OwnerUnreachable(where, member.lease_seconds, type(exc).__name__) from None
        try:
            if answer.status_code != 200:
                await answer.aread()
                raise TurnRefused(_error_message(answer))
            async for line in answer.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                for choice in json.loads(line.removeprefix("data: ")).get("choices", []):
                    if text := (choice.get("delta") or {}).get("content"):
                        yield text
        finally:
            await answer.aclose()


class TurnRefused(Exception):
    """The owner node answered the forwarded turn with an error (its message)."""


@attrs.frozen
class ForwardedTurn:
    """What a forwarded WebSocket turn asks: *text* from *user* to *agent*."""

    user: str
    agent: str
    text: str


def _error_message(answer: httpx.Response) -> str:
    try:
        return str(answer.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"the node that serves this conversation answered HTTP {answer.status_code}"
