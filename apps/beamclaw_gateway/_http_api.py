"""The HTTP routes: health, metrics, the supervision tree, and the OpenAI-compatible API."""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from quart import Blueprint, Response, current_app, g, request

import beamclaw_cluster as cluster
import beamclaw_core as core
import beamclaw_obs as obs
import supervision as sv
from beamclaw_base import Database, StoreUnavailable

from . import _idempotency as idempotency
from ._cluster_trees import TREE_PATH, node_trees
from ._config import GatewayConfig
from ._forwarding import OwnerUnreachable, forward
from ._idempotency import Answer, Running
from ._principals import Principal
from ._request_models import CHAT_PATH, CHAT_REQUEST, ChatRequest
from ._store import KEYS, gateway_database
from ._turns import BadRequest, agent_for, header_user, parse_json, run_events, user_id


@attrs.frozen
class Context:
    """What the routes need, kept on the app."""

    config: GatewayConfig
    data_dir: Path
    #: This node's membership of a cluster, or None on one node.
    member: cluster.Membership | None = None
    #: The idempotency keys of the requests this app is serving.
    running: Running = attrs.field(factory=Running)
    #: This start of the app, as the owner of the keys it marks on one node.
    boot: str = attrs.field(factory=lambda: uuid.uuid4().hex)

    @property
    def instance(self) -> str:
        """Who marks a key: this node's instance in a cluster, else this start's."""
        return self.boot if self.member is None else self.member.instance_id


def context() -> Context:
    ctx: Context = current_app.config["BEAMCLAW"]
    return ctx


def principal() -> Principal:
    """The request's principal, decided by the app's checks before any route runs."""
    who: Principal = g.beamclaw_principal
    return who


def error(message: str, status: int, code: str = "invalid_request", **headers: str) -> Response:
    """An error in the OpenAI shape, which the official clients read and raise."""
    return Response(error_body(message, status, code), status=status, content_type="application/json", headers=headers)


def error_body(message: str, status: int, code: str) -> str:
    """The OpenAI error shape; the message scrubbed (it may quote what the client sent)."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return json.dumps({"error": {"message": obs.scrub(message), "type": kind, "code": code}})


#: Seconds a client is told to wait when a process it needs is being restarted.
RESTART_RETRY_AFTER: Final = 1
#: Seconds a client is told to wait when the database is away (a restart takes a few).
_STORE_RETRY_AFTER: Final = 2


def turn_failure(result: core.TurnResult) -> tuple[int, dict[str, str]] | None:
    """The HTTP status (and headers) a failed turn is answered with; None for a 200.

    A model that could not be reached or refused is the upstream's failure (502, or
    its own 429 passed on with Retry-After); a crash or a storage fault on our side is
    temporary (503 with Retry-After): the conversation is intact and the client may
    send again. A turn the user stopped, or a chat-level answer, is a 200.
    """
    error = result.error
    if error is None or error is core.TurnError.STOPPED:
        return None
    status = {
        core.TurnError.MODEL: 429 if result.model_status == 429 else 502,
        core.TurnError.NOT_CONFIGURED: 503,
        core.TurnError.BUDGET: 429,
        core.TurnError.STORAGE: 503,
        core.TurnError.INTERRUPTED: 503,
    }[error]
    retry = result.retry_after
    if retry is None and error in {core.TurnError.STORAGE, core.TurnError.INTERRUPTED}:
        retry = RESTART_RETRY_AFTER
    return status, ({"Retry-After": str(max(1, math.ceil(retry)))} if retry is not None else {})


api = Blueprint("api", __name__)


@api.get("/health")
async def health() -> Response:
    root = context().config.root
    apps = {str(c.id): c.state.value for c in sv.which_children(root)} if sv.whereis(root) else {}
    status = "ok" if all(state == "running" for state in apps.values()) else "degraded"
    return Response(json.dumps({"status": status, "apps": apps}), content_type="application/json")


@api.get("/metrics")
async def metrics() -> Response:
    try:
        text = await obs.metrics_text()
    except sv.NoProc:
        return error("the metrics backend is not running", 503, "unavailable")
    return Response(text, content_type="text/plain; version=0.0.4; charset=utf-8")


#: What a conversation's label says to a principal that may not act as its user.
_HIDDEN_LABEL: Final = "another user's conversation"


def _within_reach(node: dict[str, Any], who: Principal) -> dict[str, Any]:
    """*node* with the label of each conversation whose user *who* may not act as hidden: a
    session's label names its user (``local:ada → default (cli)``), and a viewer or a
    scoped token must not learn who else talks to the daemon."""
    label = node.get("label")
    if isinstance(label, str) and " → " in label and not who.may_act_as(label.split(" → ", 1)[0]):
        node["label"] = _HIDDEN_LABEL
    for child in node.get("children", ()):
        _within_reach(child, who)
    return node


@api.get(TREE_PATH)
async def tree() -> Response:
    """This node's tree; with ``?cluster=1``, ``{"nodes": [...]}``: every node's, each asked
    for its own with a request signed for the caller (see `node_trees`; on one node, this
    daemon's alone). The labels of conversations outside the caller's users are hidden."""
    ctx = context()
    local = _within_reach(sv.inspect_tree(ctx.config.root), principal())
    if request.args.get("cluster", "") not in {"1", "true"} or g.beamclaw_forwarded:
        return Response(json.dumps(local), content_type="application/json")
    member = ctx.member
    if member is None:
        nodes = [{"node_id": None, "instance_id": None, "url": None, "state": "alive", "heartbeat_age": 0.0,
                  "tree": local, "error": ""}]  # fmt: skip
        return Response(json.dumps({"nodes": nodes}), content_type="application/json")
    try:
        status = await member.database.run(cluster.cluster_status, write=False)
    except StoreUnavailable as exc:
        return error(f"the cluster's registry cannot be read now: {exc}", 503, "unavailable",
                     **{"Retry-After": str(_STORE_RETRY_AFTER)})  # fmt: skip
    who = principal()

    def signed() -> dict[str, str]:
        forwarded = cluster.Forwarded("GET", TREE_PATH, b"")
        return cluster.signed_headers(member.secret, member.node_id, who.name, forwarded, time.time())

    nodes = await node_trees(status.nodes, signed, (member.instance_id, local))
    return Response(json.dumps({"nodes": nodes}), content_type="application/json")


@api.get("/v1/models")
async def models() -> Response:
    ctx = context()
    who = principal()
    data = [
        {"id": name, "object": "model", "created": 0, "owned_by": "beamclaw"}
        for name in core.agent_names(ctx.data_dir, ctx.config.default_agent)
        if who.may_use(name)
    ]
    return Response(json.dumps({"object": "list", "data": data}), content_type="application/json")


_CHAT_REQUEST: Final = "an OpenAI chat completion request"


async def json_body(what: str) -> dict[str, Any]:
    """The request body as a JSON object; `BadRequest` (saying *what* was expected) otherwise.

    Parsed once per request: the rate limiter reads the ``user`` field before the route does.
    """
    parsed = getattr(g, "beamclaw_body", None)
    if parsed is None:
        try:
            parsed = parse_json(await request.get_data(as_text=False), f"the body ({what})")
            if not isinstance(parsed, dict):
                raise BadRequest(f"the body must be a JSON object ({what})")
        except BadRequest as exc:
            parsed = exc
        g.beamclaw_body = parsed
    if isinstance(parsed, BadRequest):
        raise parsed
    return parsed


async def request_user(who: Principal) -> str:
    """Who a request speaks for, as the route will see it: for a chat completion the body's
    ``user`` field, else ``X-User-Id`` (the rate limiter's per-user key).

    A body the route will refuse counts under the header's user.
    """
    header = request.headers.get("X-User-Id")
    if request.method == "POST" and request.path == CHAT_PATH:
        try:
            return user_id((await json_body(_CHAT_REQUEST)).get("user"), header, who)
        except BadRequest:
            pass
    return header_user(header, who)


async def _turn_request() -> tuple[core.SessionHandle, str, ChatRequest]:
    chat = CHAT_REQUEST.parse(await json_body(_CHAT_REQUEST))
    ctx = context()
    who = principal()
    agent = agent_for(chat.model, ctx.data_dir, ctx.config.default_agent, who)
    user = user_id(chat.user, request.headers.get("X-User-Id"), who)
    text = core.truncated(chat.last_user_text(), ctx.config.http.max_user_chars)
    return await core.open_session(user, agent, "http"), text, chat


def _completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def _usage(result: core.TurnResult) -> dict[str, int]:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


@api.post(CHAT_PATH)
async def chat_completions() -> Response:
    header = request.headers.get(idempotency.HEADER)
    try:
        key = None if header is None else idempotency.checked_key(header)
    except idempotency.BadKey as exc:
        raise BadRequest(str(exc)) from None
    handle, text, chat = await _turn_request()  # a conversation another node owns: forwarded there, key and all
    model = f"beamclaw/{handle.agent_id}" if (chat.model or "").startswith("beamclaw/") else handle.agent_id
    if key is None:
        return await _answer(handle, text, chat, model)
    return await _idempotent(key, handle, text, chat, model)


async def _answer(
    handle: core.SessionHandle, text: str, chat: ChatRequest, model: str, kept: _Held | None = None
) -> Response:
    """The turn of *text*, answered as *chat* asks (JSON, or a stream); *kept* is told the answer."""
    if chat.stream:
        include_usage = chat.stream_options is not None and chat.stream_options.include_usage
        return await _stream(handle, text, model, include_usage, kept)
    channel = _Collected()
    result = await core.send_message(handle, text, channel, origin=principal().origin("http"))
    failure = turn_failure(result)
    if failure is not None:
        status, headers = failure
        response = error(result.text, status, result.error.value if result.error else "error", **headers)
    else:
        # Approval questions and errors sent during the turn come before the answer.
        content = "\n\n".join([*channel.sent, result.text]) if not result.ok or channel.sent else result.text
        response = Response(json.dumps(_completion(model, content, _usage(result))), content_type="application/json")
    if kept is not None:
        await kept.keep(Answer(response.status_code, "application/json", await response.get_data(as_text=True)))
    return response


@attrs.define
class _Collected(core.ReplyOnlyChannel):
    """A JSON answer's channel: the messages sent during the turn (approval questions,
    errors) are kept for the answer; no drafts (the reply's streamed pieces go nowhere)."""

    sent: list[str] = attrs.field(factory=list)

    async def send(self, text: str) -> None:
        self.sent.append(text)


def _completion(model: str, content: str, usage: dict[str, int]) -> dict[str, Any]:
    return {
        "id": _completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": usage,
    }


@attrs.define
class _Held:
    """A request's hold on its idempotency key: `keep` its answer (once), or `let_go`."""

    db: Database
    principal: str
    key: str
    running: Running

    async def keep(self, answer: Answer) -> None:
        with trio.CancelScope(shield=True):  # a client gone meanwhile must not leave the key started
            await self.db.run(lambda tx: idempotency.finish(tx, self.principal, self.key, answer))
        self.let_go()

    def let_go(self) -> None:
        """This node serves the key's request no more (a key left started was cut)."""
        self.running.drop(self.principal, self.key)


#: What a retry is told when the turn of its first request was cut before the agent's answer.
INTERRUPTED_TURN: Final = (
    "The turn of this message was interrupted (the node serving it stopped) before the agent answered. "
    "Send the message again, with a new Idempotency-Key, to have it answered."
)


async def _idempotent(key: str, handle: core.SessionHandle, text: str, chat: ChatRequest, model: str) -> Response:
    """The answer of a request with an idempotency key: its turn once, however often it is sent (`_idempotency`)."""
    ctx = context()
    who = principal().name
    if not ctx.running.take(who, key):
        return _still_running()
    streaming = False
    try:
        digest = idempotency.request_hash(await json_body(_CHAT_REQUEST), request.headers.get("X-User-Id"))
        db = await gateway_database(KEYS)
        now = time.time()
        known = await db.run(lambda tx: idempotency.claim(tx, who, key, digest, owner=ctx.instance, now=now))
        held = _Held(db, who, key, ctx.running)
        if known is None:
            response = await _answer(handle, text, chat, model, held)
            streaming = response.mimetype == "text/event-stream"  # the stream lets the key go when it ends
            return response
        if known.request_hash != digest:
            return error(f"this {idempotency.HEADER} was used for another request; use a new key for a new "
                         "request", 422, "idempotency_key_reused")  # fmt: skip
        answer = known.answer
        if answer is None and await core.turns_in_progress(handle):
            # Its request was cut (the client or a forwarding node went) but the turn goes on.
            return _still_running()
        if answer is None:  # started, no request of this node (the owner) holds it, no turn runs: it was cut
            answer = await _from_history(handle, text, chat, model)
            await held.keep(answer)
        return Response(answer.body, status=answer.status, content_type=answer.content_type,
                        headers={"Idempotent-Replayed": "true"})  # fmt: skip
    finally:
        if not streaming:
            ctx.running.drop(who, key)


def _still_running() -> Response:
    return error(
        f"the first request with this {idempotency.HEADER} is still being answered; retry in a moment to get its "
        "answer", 409, "idempotency_key_in_use", **{"Retry-After": str(RESTART_RETRY_AFTER)},
    )  # fmt: skip


async def _from_history(handle: core.SessionHandle, text: str, chat: ChatRequest, model: str) -> Answer:
    """The answer to a cut turn, from the conversation's (repaired) history: the agent's
    final reply to *text* if it made one, else that the turn was interrupted."""
    messages = await core.history(handle)
    content = INTERRUPTED_TURN
    asked = max((i for i, m in enumerate(messages) if m.role == "user" and m.content == text), default=None)
    if asked is not None:
        for message in messages[asked + 1 :]:
            if message.role == "user":
                break
            if message.role == "assistant" and message.content and not message.tool_calls:
                content = message.content
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    if not chat.stream:
        return Answer(200, "application/json", json.dumps(_completion(model, content, usage)))
    body = _completion(model, content, usage) | {"object": "chat.completion.chunk"}
    body["choices"] = [{"index": 0, "delta": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
    return Answer(200, "text/event-stream", f"data: {json.dumps(body)}\n\ndata: [DONE]\n\n")


async def _chain(head: list[dict[str, Any]], rest: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for event in head:
        yield event
    async for event in rest:
        yield event


async def _stream(
    handle: core.SessionHandle, text: str, model: str, include_usage: bool, kept: _Held | None = None
) -> Response:
    """Server-Sent Events of the turn; a turn that fails before its first event is an
    HTTP error instead (the usual case: the model unreachable, its key missing), and
    one that fails later ends the stream with an error event, as OpenAI's does."""
    turn = run_events(handle, text, principal().origin("http"))
    first = [await anext(turn)]
    while first[-1]["type"] == "typing":
        first = [await anext(turn)]
    if first[-1]["type"] == "failed":
        first.append(await anext(turn))  # the "done" that follows at once
    if first[-1]["type"] == "done" and (failure := turn_failure(first[-1]["result"])) is not None:
        await turn.aclose()
        result = first[-1]["result"]
        response = error(result.text, failure[0], result.error.value, **failure[1])
        if kept is not None:
            await kept.keep(Answer(response.status_code, "application/json", await response.get_data(as_text=True)))
        return response
    cid = _completion_id()
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        body = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(body)}\n\n".encode()

    async def kept_events(kept: _Held) -> AsyncIterator[bytes]:
        """The events, kept once the last is sent (a stream cut before keeps nothing:
        a retry finds its key started and no request holding it, and answers from history)."""
        sent: list[bytes] = []
        try:
            async for event in events():
                sent.append(event)
                yield event
            await kept.keep(Answer(200, "text/event-stream", b"".join(sent).decode()))
        finally:
            kept.let_go()

    async def events() -> AsyncIterator[bytes]:
        yield chunk({"role": "assistant", "content": ""})
        result: core.TurnResult | None = None
        failed = ""
        async for event in _chain(first, turn):
            if event["type"] == "chunk":
                yield chunk({"content": event["text"]})
            elif event["type"] == "message":
                yield chunk({"content": f"{event['text']}\n\n"})
            elif event["type"] == "failed":
                failed = event["text"]
            elif event["type"] == "done":
                result = event["result"]
        failure = turn_failure(result) if result is not None else None
        if failure is not None and result is not None and result.error is not None:
            yield f"data: {error_body(result.text, failure[0], result.error.value)}\n\n".encode()
            yield b"data: [DONE]\n\n"
            return
        if failed:  # a turn the user stopped: its text is the answer
            yield chunk({"content": failed})
        yield chunk({}, "stop")
        if include_usage and result is not None:
            usage = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": _usage(result),
            }
            yield f"data: {json.dumps(usage)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    response = Response(events() if kept is None else kept_events(kept), content_type="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.timeout = None  # a long turn is not a stuck response
    return response


@api.errorhandler(BadRequest)
async def bad_request(exc: BadRequest) -> Response:
    return error(str(exc), exc.status, exc.code)


#: What a call to a process that is being restarted (or does not answer) raises.
RESTARTING: Final = (sv.NoProc, sv.ProcessExited, sv.CallTimeout)


@api.errorhandler(sv.NoProc)
@api.errorhandler(sv.ProcessExited)
@api.errorhandler(sv.CallTimeout)
async def restarting(exc: Exception) -> Response:
    """A process the request needs is being restarted (or did not answer): try again soon."""
    return error(
        f"BeamClaw is restarting a part this request needs ({type(exc).__name__}); "
        "nothing was lost, please retry in a second",
        503, "restarting", **{"Retry-After": str(RESTART_RETRY_AFTER)},
    )  # fmt: skip


@api.errorhandler(core.OwnedElsewhere)
async def owned_elsewhere(exc: core.OwnedElsewhere) -> Response:
    """Another node owns the conversation: its answer, through this node. A request that
    was forwarded already is not passed on again (the conversation moved meanwhile)."""
    member = context().member
    if member is None or g.get("beamclaw_forwarded", False):
        return error(f"{exc}; please retry", 503, "moved", **{"Retry-After": str(RESTART_RETRY_AFTER)})
    try:
        return await forward(exc.where, member, principal())
    except OwnerUnreachable as unreachable:  # dead, most likely: its lease ends, and a retry takes over
        return error(str(unreachable), 503, "owner_unreachable", **{"Retry-After": str(unreachable.retry_after)})


@api.errorhandler(StoreUnavailable)
async def store_unavailable(exc: StoreUnavailable) -> Response:
    """The database is away for now (a restart, a failover): nothing acknowledged is lost."""
    return error(
        "the store is unavailable for now; nothing acknowledged was lost, please retry", 503, "store_unavailable",
        **{"Retry-After": str(_STORE_RETRY_AFTER)},
    )  # fmt: skip


@api.errorhandler(core.InvalidAgentName)
async def bad_agent(exc: core.InvalidAgentName) -> Response:
    if isinstance(exc, core.UnknownAgent):
        return error(str(exc), 404, "model_not_found")
    return error(str(exc), 400)
