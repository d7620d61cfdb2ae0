"""Who may speak as whom: each token's principal, attacked from outside as a second client would.

Two operator tokens (alice's and bob's), a viewer and an admin, each from its own
environment variable or file: bob must never read, continue, cancel or subscribe to
what alice's client made, on any route, and a viewer reads metadata only.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import trio
from loguru import logger
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from trio_websocket import open_websocket_url

import beamclaw_core as core
from tests.support.model_server import Call, Echo, Hold, Reply

from .conftest import Gateway, RunGateway, ws_upgrade

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
VIEWER = "viewer-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"


@pytest.fixture
def tokens(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """``[gateway.auth]`` with alice, bob (from a file) and a viewer; the legacy token is the admin's."""
    monkeypatch.setenv("ALICE_TOKEN", ALICE)
    monkeypatch.setenv("VIEWER_TOKEN", VIEWER)
    bob_file = tmp_path / "bob.token"
    bob_file.write_text(BOB + "\n")
    return {
        "auth": {
            "tokens": {
                "alice": {"token": {"env": "ALICE_TOKEN"}},
                "bob": {"token": {"file": str(bob_file)}},
                "viewer": {"token": {"env": "VIEWER_TOKEN"}, "role": "viewer"},
            }
        }
    }


def _as(g: Gateway, token: str) -> httpx.AsyncClient:
    return g.client({"Authorization": f"Bearer {token}"})


async def _chat(g: Gateway, token: str, text: str, **body: Any) -> httpx.Response:
    async with _as(g, token) as http:
        return await http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": text}], **body})


async def _rpc(g: Gateway, token: str, method: str, params: Any) -> dict[str, Any]:
    async with _as(g, token) as http:
        answer = await http.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _users_seen_by_model(g: Gateway) -> list[list[str]]:
    return [[m["content"] for m in r["messages"] if m["role"] == "user"] for r in g.model.requests]


async def test_no_token_or_a_wrong_one_is_refused_and_each_token_is_its_own_user(
    run_gateway: RunGateway, tokens: dict[str, Any]
) -> None:
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        async with g.client({"Authorization": ""}) as http:
            assert (await http.get("/v1/models")).status_code == 401
        assert (await _chat(g, "not-a-token-0123456789", "hi")).status_code == 401
        assert (await _chat(g, ALICE, "alice's secret plan")).status_code == 200
        assert (await _chat(g, BOB, "hello", user="u1")).status_code == 200
        listed, _ = await core.list_sessions()
        assert {s.user_id for s in listed} == {"api:alice", "api:bob/u1"}
        # Bob's conversation never held alice's words.
        assert _users_seen_by_model(g)[1] == ["hello"]


@pytest.mark.parametrize(
    "body",
    [
        {"user": "api:alice"},
        {"user": "local:owner"},
        {"user": "a2a:ctx-1"},
        {"user": "tg:12345"},
        {"user": "mcp:host"},
        {"user": "api:bob-not-bob"},
    ],
)
async def test_a_user_outside_the_tokens_reach_is_refused_on_http(
    run_gateway: RunGateway, tokens: dict[str, Any], body: dict[str, str]
) -> None:
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        refused = await _chat(g, BOB, "let me in", **body)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "forbidden"
        async with _as(g, BOB) as http:  # the header is no way around it
            header = await http.post(
                "/v1/chat/completions",
                json={"messages": [{"role": "user", "content": "hi"}]},
                headers={"X-User-Id": body["user"]},
            )
        assert header.status_code == 403
        assert g.model.requests == []
        assert (await core.list_sessions())[0] == []


async def test_an_admin_token_may_act_as_anyone(run_gateway: RunGateway, tokens: dict[str, Any]) -> None:
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        assert (await _chat(g, ADMIN, "hi", user="local:owner")).status_code == 200
        assert (await _chat(g, ADMIN, "hi", user="ada")).status_code == 200
        assert {s.user_id for s in (await core.list_sessions())[0]} == {"local:owner", "api:ada"}


async def test_a_viewer_reads_metadata_and_cannot_chat(run_gateway: RunGateway, tokens: dict[str, Any]) -> None:
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        async with _as(g, VIEWER) as http:
            assert (await http.get("/v1/models")).status_code == 200
            assert (await http.get("/v1/supervision/tree")).status_code == 200
            a2a = await http.post("/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}})
            assert a2a.status_code == 403
        assert (await _chat(g, VIEWER, "hi")).status_code == 403
        head, stream = await ws_upgrade(int(g.url.rsplit(":", 1)[1]), {"Authorization": f"Bearer {VIEWER}"})
        await stream.aclose()
        assert head.startswith(b"http/1.1 403")
        assert g.model.requests == []


def _labels(tree: dict[str, Any]) -> list[str]:
    own = [tree["label"]] if "label" in tree else []
    return own + [label for child in tree.get("children", ()) for label in _labels(child)]


async def test_the_tree_shows_a_conversations_user_only_to_who_may_act_as_it(
    run_gateway: RunGateway, tokens: dict[str, Any]
) -> None:
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        assert (await _chat(g, ALICE, "hi")).status_code == 200
        seen = {}
        for name, token in (("alice", ALICE), ("bob", BOB), ("viewer", VIEWER), ("admin", ADMIN)):
            async with _as(g, token) as http:
                answer = await http.get("/v1/supervision/tree")
            assert answer.status_code == 200, answer.text
            seen[name] = [label for label in _labels(answer.json()) if "→" in label or "conversation" in label]
        assert seen["alice"] == seen["admin"] == ["api:alice → default (http)"]
        assert seen["bob"] == seen["viewer"] == ["another user's conversation"]


async def test_a_token_limited_to_some_agents_sees_and_uses_only_those(
    run_gateway: RunGateway, tokens: dict[str, Any]
) -> None:
    tokens["auth"]["tokens"]["alice"]["agents"] = ["helper"]
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        async with _as(g, ALICE) as http:
            assert (await http.get("/v1/models")).json()["data"] == []
        refused = await _chat(g, ALICE, "hi")
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")


async def test_ws_refuses_a_user_outside_the_tokens_reach(run_gateway: RunGateway, tokens: dict[str, Any]) -> None:
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        url = g.url.replace("http://", "ws://") + "/ws"
        async with open_websocket_url(url, extra_headers=[("Authorization", f"Bearer {BOB}")]) as ws:
            await ws.send_message(json.dumps({"type": "message", "id": "1", "text": "hi", "user": "api:alice"}))
            refused = json.loads(await ws.get_message())
            assert refused["type"] == "error" and "may not act as user 'api:alice'" in refused["error"]
            await ws.send_message(json.dumps({"type": "message", "id": "2", "text": "mine", "user": "u7"}))
            with trio.fail_after(30):
                while (event := json.loads(await ws.get_message()))["type"] != "run_completed":
                    pass
            assert event["ok"] is True
        assert {s.user_id for s in (await core.list_sessions())[0]} == {"api:bob/u7"}


async def test_a2a_tasks_are_out_of_another_clients_reach(run_gateway: RunGateway, tokens: dict[str, Any]) -> None:
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        message = {"messageId": "m1", "contextId": "ctx-1", "role": "ROLE_USER", "parts": [{"text": "alice's plan"}]}
        sent = await _rpc(g, ALICE, "SendMessage", {"message": message})
        task = sent["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        for method, params in [
            ("GetTask", {"id": task["id"]}),
            ("CancelTask", {"id": task["id"]}),
            ("SubscribeToTask", {"id": task["id"]}),
        ]:
            answer = await _rpc(g, BOB, method, params)
            assert answer["error"]["code"] == -32001, (method, answer)
        listed = await _rpc(g, BOB, "ListTasks", {"contextId": "ctx-1"})
        assert listed["result"]["tasks"] == [] and listed["result"]["totalSize"] == 0
        # Bob continuing alice's context starts his own conversation: alice's words stay hers.
        bobs = {**message, "messageId": "m2", "parts": [{"text": "what was the plan?"}]}
        await _rpc(g, BOB, "SendMessage", {"message": bobs})
        assert _users_seen_by_model(g)[-1] == ["what was the plan?"]
        # Alice still sees hers; the admin sees both.
        assert (await _rpc(g, ALICE, "ListTasks", {}))["result"]["totalSize"] == 1
        assert (await _rpc(g, ADMIN, "ListTasks", {}))["result"]["totalSize"] == 2
        # And no chat route reaches an A2A conversation by its user id.
        assert (await _chat(g, BOB, "hi", user="a2a:alice/ctx-1")).status_code == 403


async def test_canceling_an_a2a_task_stops_its_turn(run_gateway: RunGateway, tokens: dict[str, Any]) -> None:
    hold = Hold(then=Reply(tool_calls=(Call("write_file", {"path": "after-cancel.txt", "content": "x"}),)))
    async with run_gateway(hold, Reply("done"), gateway_table=tokens, token=ADMIN, autonomy_level="full") as g:
        message = {"messageId": "m1", "contextId": "c", "role": "ROLE_USER", "parts": [{"text": "write a file"}]}
        sent = await _rpc(g, ALICE, "SendMessage", {"message": message, "configuration": {"returnImmediately": True}})
        task_id = sent["result"]["task"]["id"]
        with trio.fail_after(30):
            await hold.reached.wait()
        canceled = await _rpc(g, ALICE, "CancelTask", {"id": task_id})
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        hold.release()
        # Turns of one conversation run one after the other: once the next one is answered,
        # the canceled one has ended, wherever it stood.
        after = {**message, "messageId": "m2", "parts": [{"text": "next"}]}
        answered = await _rpc(g, ALICE, "SendMessage", {"message": after})
        assert answered["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert not list(g.home.rglob("after-cancel.txt"))
        assert [r["messages"][-1]["content"] for r in g.model.requests] == ["write a file", "next"]


@contextlib.asynccontextmanager
async def _mcp(g: Gateway, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        streamable_http_client(f"{g.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_the_mcp_chat_tool_speaks_only_as_the_tokens_mcp_users(
    run_gateway: RunGateway, tokens: dict[str, Any]
) -> None:
    steps = [Reply(tool_calls=(Call("bash", {"command": "command echo owned"}, id="b"),))]
    async with run_gateway(*steps, repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        # The owner's terminal conversation is waiting for an approval.
        owner = await core.open_session("local:owner", "default", "cli")
        collected = core.CollectingChannel()
        run = await core.submit(owner, "run it", collected)
        with trio.fail_after(30):
            while not collected.sent:
                await trio.sleep(0.02)
        async with _mcp(g, BOB) as mcp:
            for user in ("local:owner", "api:alice", "mcp:admin", "mcp:alice/x"):
                refused = await mcp.call_tool("chat", {"message": "/yes", "user": user})
                assert refused.is_error and "speaks only as mcp:bob users" in _text(refused), user
            own = await mcp.call_tool("chat", {"message": "hello", "user": "ide"})
            assert (_text(own), own.is_error) == ("You said: hello", False)
        async with _mcp(g, ADMIN) as mcp:  # an admin's host too: its model fills the arguments
            refused = await mcp.call_tool("chat", {"message": "/yes", "user": "local:owner"})
            assert refused.is_error
        assert run.result is None  # still waiting: nothing approved it
        assert {s.user_id for s in (await core.list_sessions())[0]} == {"local:owner", "mcp:bob/ide"}
        await core.stop_turn(owner)


_ASKS_FOR_BASH = (Reply(tool_calls=(Call("bash", {"command": "command echo owned"}, id="b"),)), Reply("ran it"))


@contextlib.asynccontextmanager
async def _waiting_for_approval(g: Gateway, token: str, user: str) -> AsyncIterator[list[httpx.Response]]:
    """An HTTP turn of *token* as *user* waiting for its bash call's approval; its answer
    is in the list once the block has let it end."""
    answers: list[httpx.Response] = []

    async def ask() -> None:
        answers.append(await _chat(g, token, "run it", user=user))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        with trio.fail_after(30):
            while not any(e.name == "approval_requested" for e in g.events):
                await trio.sleep(0.02)
        yield answers


async def _ws_say(g: Gateway, token: str, text: str, user: str) -> dict[str, Any]:
    """Send *text* as *user* over /ws with *token*; the run's ``run_completed`` event."""
    url = g.url.replace("http://", "ws://") + "/ws"
    async with open_websocket_url(url, extra_headers=[("Authorization", f"Bearer {token}")]) as ws:
        await ws.send_message(json.dumps({"type": "message", "id": "y", "text": text, "user": user}))
        with trio.fail_after(30):
            while True:
                event: dict[str, Any] = json.loads(await ws.get_message())
                if event["type"] == "run_completed":
                    return event


async def test_yes_from_another_channel_of_the_same_user_approves_nothing(
    run_gateway: RunGateway, tokens: dict[str, Any]
) -> None:
    async with run_gateway(*_ASKS_FOR_BASH, gateway_table=tokens, token=ADMIN) as g:
        async with _waiting_for_approval(g, ADMIN, "ada") as answers:
            event = await _ws_say(g, ADMIN, "/yes", "ada")
            assert event["ok"] is False and "nothing waiting for approval here" in event["text"]
            assert not any(e.name == "approval_resolved" for e in g.events)
            assert (await _chat(g, ADMIN, "/yes", user="ada")).status_code == 200  # from where it was asked
        assert answers[0].json()["choices"][0]["message"]["content"].endswith("ran it")


async def test_another_tokens_yes_approves_nothing_even_an_admins(
    run_gateway: RunGateway, tokens: dict[str, Any]
) -> None:
    """The approval is bound to who asked: an admin acting as alice's user, through the
    same channel, sends a /yes that answers nothing (the attack that found it: an admin's
    MCP host, whose model fills the user)."""
    async with run_gateway(*_ASKS_FOR_BASH, gateway_table=tokens, token=ADMIN) as g:
        async with _waiting_for_approval(g, ALICE, "s1") as answers:
            admins = await _chat(g, ADMIN, "/yes", user="api:alice/s1")
            assert "nothing waiting for approval here" in admins.text
            assert (await _ws_say(g, ADMIN, "/yes", "api:alice/s1"))["ok"] is False
            assert not any(e.name == "approval_resolved" for e in g.events)
            assert (await _chat(g, ALICE, "/yes", user="s1")).status_code == 200  # alice's own answer
        assert answers[0].json()["choices"][0]["message"]["content"].endswith("ran it")


async def test_an_admins_mcp_host_and_a2a_client_reach_only_their_own_conversations(
    run_gateway: RunGateway, tokens: dict[str, Any]
) -> None:
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        async with _mcp(g, ALICE) as mcp:
            assert _text(await mcp.call_tool("chat", {"message": "alice's mcp secret", "user": "s3"})).startswith(
                "You said"
            )
        async with _mcp(g, ADMIN) as mcp:
            for user in ("mcp:alice/s3", "mcp:alice", "local:owner"):
                refused = await mcp.call_tool("chat", {"message": "what was said?", "user": user})
                assert refused.is_error and "speaks only as mcp:admin users" in _text(refused), user
            assert not (await mcp.call_tool("chat", {"message": "mine", "user": "ide"})).is_error
        message = {"messageId": "m1", "contextId": "ctx", "role": "ROLE_USER", "parts": [{"text": "alice's a2a"}]}
        await _rpc(g, ALICE, "SendMessage", {"message": message})
        crafted = {**message, "messageId": "m2", "contextId": "alice/ctx", "parts": [{"text": "and?"}]}
        await _rpc(g, ADMIN, "SendMessage", {"message": crafted})
        assert _users_seen_by_model(g)[-1] == ["and?"]  # the admin's own context: alice's words stay hers
        users = {s.user_id for s in (await core.list_sessions())[0]}
        assert users == {"mcp:alice/s3", "mcp:admin/ide", "a2a:alice/ctx", "a2a:admin/alice/ctx"}


async def test_one_token_cannot_take_every_websocket(run_gateway: RunGateway, tokens: dict[str, Any]) -> None:
    table = {**tokens, "http": {"max_ws_connections_per_client": 3, "max_ws_connections": 5}}
    table["rate_limit"] = {"requests": 100_000}
    async with run_gateway(repeat=Echo(), gateway_table=table, token=ADMIN) as g:
        port = int(g.url.rsplit(":", 1)[1])
        held: list[trio.SocketStream] = []
        try:
            heads = []
            for _ in range(5):  # bob, as if from many addresses: a token's share is its own
                head, stream = await ws_upgrade(port, {"Authorization": f"Bearer {BOB}"})
                heads.append(head.split(b"\r\n")[0])
                held.append(stream)
            assert heads == [b"http/1.1 101 "] * 3 + [b"http/1.1 503 "] * 2
            head, stream = await ws_upgrade(port, {"Authorization": f"Bearer {ALICE}"})
            held.append(stream)
            assert head.startswith(b"http/1.1 101")  # alice still gets in
        finally:
            for stream in held:
                await stream.aclose()


async def test_a_token_file_is_read_again_when_it_changes(
    run_gateway: RunGateway, tokens: dict[str, Any], tmp_path: Path
) -> None:
    (tmp_path / "bob.token").chmod(0o644)
    warnings: list[str] = []
    sink = logger.add(lambda message: warnings.append(message.record["message"]), level="WARNING")
    try:
        async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN):
            pass
    finally:
        logger.remove(sink)
    assert any("bob.token can be read by other users (mode 644): chmod 600 it" in w for w in warnings)
    async with run_gateway(repeat=Echo(), gateway_table=tokens, token=ADMIN) as g:
        assert (await _chat(g, BOB, "hi")).status_code == 200
        (tmp_path / "bob.token").write_text("bob-rotated-0123456789abcdef\n")
        assert (await _chat(g, BOB, "hi")).status_code == 401
        assert (await _chat(g, "bob-rotated-0123456789abcdef", "hi")).status_code == 200


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"token": {"env": "NOT_SET_ANYWHERE"}}, "needs the environment variable NOT_SET_ANYWHERE"),
        ({"token": {"file": "/nonexistent/token"}}, "cannot be read or is empty"),
        ({"token": {"env": "ALICE_TOKEN", "file": "/x"}}, "must be { env"),
        ({"token": {"env": "ALICE_TOKEN"}, "role": "root"}, "role"),
        ({"token": {"env": "ALICE_TOKEN"}, "users": ["api:*x"]}, "a prefix ending in '*'"),
    ],
)
def test_bad_token_tables_are_refused_naming_the_key(
    monkeypatch: pytest.MonkeyPatch, entry: dict[str, Any], message: str
) -> None:
    import beamclaw_gateway as gateway

    monkeypatch.setenv("ALICE_TOKEN", ALICE)
    with pytest.raises(ValueError, match=r"gateway\.auth\.tokens\.web") as raised:
        gateway.parse_gateway_config({"auth": {"tokens": {"web": entry}}})
    assert message in str(raised.value)


@pytest.mark.parametrize("name", ["admin", "local", "anonymous", "Alice", "a/b", ""])
def test_a_token_may_not_take_a_name_whose_users_are_anothers(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``anonymous`` is an admin's user when it names none, ``admin`` and ``local`` own the
    legacy token's and the token-less conversations: a token by those names would share them."""
    import beamclaw_gateway as gateway

    monkeypatch.setenv("ALICE_TOKEN", ALICE)
    with pytest.raises(ValueError, match="a token's name is"):
        gateway.parse_gateway_config({"auth": {"tokens": {name: {"token": {"env": "ALICE_TOKEN"}}}}})
