"""Every bad input is a 4xx (or a JSON-RPC error) that says what was wrong; never a 500.

The cases once answered with a 500 (or crashed the A2A task manager, which then
answered the next requests with 503s) are pinned one by one; then hypothesis and
schemathesis throw what they like at the routes, and nothing already stored is lost.
"""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any

import httpx
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio_websocket import open_websocket_url

from tests.support.json_mutation import DROP, mutated, paths
from tests.support.model_server import Reply

from .conftest import Gateway, RunGateway

JSON = {"Content-Type": "application/json"}
USER = [{"role": "user", "content": "hi"}]


def _chat(**fields: Any) -> bytes:
    return json.dumps({"model": "default", "messages": USER, **fields}).encode()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[" * 100_000, "nested too deeply"),
        (b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (b"\xff\xfe{}", "in UTF-8"),
        (b'{"messages": [{"role": "user", "content": "x"}], "stream": NaN}', "NaN is not a JSON number"),
        (b'{"messages": [], "temperature": -Infinity}', "-Infinity is not a JSON number"),
        (b'{"messages": [], "n": ' + b"9" * 5000 + b"}", "must be JSON"),
        (_chat(stream_options="yes", stream=True), "'stream_options' must be an object"),
        (_chat(stream_options={"include_usage": "yes"}, stream=True), "include_usage' must be true or false"),
        (json.dumps({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}).encode(),
         "messages[0].content[0].text must be a string"),
        (json.dumps({"messages": [{"role": "user", "content": [{"type": "text", "text": ["deep"]}]}]}).encode(),
         "messages[0].content[0].text must be a string"),
        (json.dumps({"messages": [{"role": "user", "content": ["text"]}]}).encode(),
         "messages[0].content[0] must be an object"),
        (json.dumps({"messages": [{"role": 5, "content": "x"}, *USER]}).encode(), "messages[0].role must be a string"),
        (json.dumps({"messages": [*USER, 5]}).encode(), "messages[1] must be an object"),
        (b'{"messages": [{"role": "user", "content": "a\\ud800b"}]}', "lone surrogate at character 1"),
        (_chat(user="a\u0000b"), "a user id must be printable"),
        (_chat(model=["default"]), "'model' must be a string"),
        (b'{"messages": [{"role": "user", "content": "x"}], "stream": 1e999}', "'stream' must be true or false"),
        (_chat(temperature="hot"), "'temperature' must be a number from 0 to 2"),
        (_chat(temperature=True), "'temperature' must be a number"),
        (_chat(top_p=3), "'top_p' must be a number from 0 to 1"),
        (_chat(max_tokens=-1), "'max_tokens' must be a whole number of at least 1"),
        (_chat(max_completion_tokens=1.5), "'max_completion_tokens' must be a whole number"),
        (_chat(tools="x"), "'tools' must be a list"),
        (_chat(tool_choice=5), "'tool_choice' must be a string or an object"),
        (_chat(stop=5), "'stop' must be a string or a list of strings"),
        (_chat(n=3), "'n' must be 1"),
        (_chat(n=True), "'n' must be 1"),
        (b'{"messages": [{"role": "user", "content": ["\\ud800"]}]}', "messages[0].content[0] holds a lone surrogate"),
        (_chat(stop=["x", 5]), "'stop' must be a string or a list of strings"),
        (json.dumps({"messages": [{"role": "user", "content": 5}, *USER]}).encode(),
         "messages[0].content must be a string, a list of content parts or null"),
        (json.dumps({"messages": [{"role": "user", "content": [{"text": "untyped"}]}]}).encode(),
         "messages[0].content[0].type must be a string"),
        (json.dumps({"messages": [{"role": "user", "content": [{"type": "text"}]}]}).encode(),
         "messages[0].content[0].text must be a string"),
        (_chat(user="api_key=hunter2hunter2"), "a user id looks like a credential"),
        (_chat(user="local:sk-ant-api03-Zq8vT3xLmN4pR7sK2wY9aB6cZq8vT3xLmN4p"), "a user id looks like a credential"),
        (_chat(user="ada\x1b]0;pwned\x07"), "a user id must be printable"),
        (_chat(user="x" * 125), "at most 128 characters, its namespace included"),
        (_chat(user=5), "'user' must be a string"),
    ],
)  # fmt: skip
async def test_a_bad_chat_request_is_a_400_saying_what(run_gateway: RunGateway, body: bytes, message: str) -> None:
    async with run_gateway() as g, g.client(headers=JSON) as http:
        answer = await http.post("/v1/chat/completions", content=body)
        assert answer.status_code == 400, answer.text
        assert message in answer.json()["error"]["message"]
        assert g.model.count == 0


def _rpc(method: str, params: Any, rid: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def _send(text: str, **message: Any) -> dict[str, Any]:
    return {"message": {"messageId": "1", "role": "ROLE_USER", "parts": [{"text": text}], **message}}


@pytest.mark.parametrize(
    ("request_body", "code", "message"),
    [
        ({**_rpc("SendMessage", _send("hi")), "params": {**_send("hi"), "configuration": "yes"}}, -32602,
         "params.configuration must be an object"),
        (_rpc("SendMessage", {**_send("hi"), "configuration": {"returnImmediately": "yes"}}), -32602,
         "returnImmediately must be true or false"),
        (_rpc("ListTasks", {"pageToken": "²"}), -32602, "pageToken must be a nextPageToken"),
        (_rpc("ListTasks", {"pageToken": "9" * 30}), -32602, "pageToken"),
        (_rpc("ListTasks", {"pageToken": 10**30}), -32602, "pageToken"),
        (_rpc("ListTasks", {"pageSize": True}), -32602, "pageSize must be an integer from 1 to 100"),
        (_rpc("ListTasks", {"status": "TASK_STATE_NAPPING"}), -32602, "params.status must be one of"),
        (_rpc("ListTasks", {"contextId": {"$ne": 1}}), -32602, "params.contextId must be a printable string"),
        (_rpc("GetTask", {"id": 5}), -32602, "params.id must be a printable string"),
        (_rpc("GetTask", {"id": "x" * 100_000}), -32602, "params.id must be a printable string"),
        (_rpc("GetTask", {"id": "t", "historyLength": "all"}), -32602, "historyLength must be an integer"),
        (_rpc("SendMessage", {"message": {"parts": [{"text": 5}]}}), -32602, "parts[0].text must be a string"),
        (_rpc("SendMessage", {"message": {"parts": ["hi"]}}), -32602, "parts[0] must be an object"),
        (_rpc("SendMessage", _send("a\ud800b")), -32602, "lone surrogate"),
        (_rpc("SendMessage", _send("hi", contextId=["x"])), -32602, "contextId must be a printable string"),
        (_rpc("SendMessage", _send("hi", contextId="api_key=hunter2hunter2")), -32602, "looks like a credential"),
        (_rpc("SendMessage", _send("hi", role="ROLE_GOD")), -32602, "params.message.role must be ROLE_USER"),
        (_rpc("SendMessage", _send("hi", role=3)), -32602, "params.message.role must be ROLE_USER"),
        (_rpc("SendMessage", _send("hi", role="ROLE_AGENT")), -32602, "only a user's message can be sent"),
        (_rpc("SendMessage", _send("hi", messageId={})), -32602, "params.message.messageId must be a printable"),
        (_rpc("SendMessage", _send("hi", messageId=5)), -32602, "params.message.messageId must be a printable"),
        (_rpc("SendMessage", _send("hi", taskId="nonexistent")), -32001, "nonexistent"),
        (_rpc("SendMessage", _send("hi", metadata=[1])), -32602, "params.message.metadata must be an object"),
        (_rpc("SendMessage", {**_send("hi"), "metadata": "x"}), -32602, "params.metadata must be an object"),
        (_rpc("SendMessage", _send("hi", referenceTaskIds="t")), -32602, "referenceTaskIds must be a list"),
        (_rpc("SendMessage", {**_send("hi"), "configuration": {"historyLength": -5}}), -32602,
         "params.configuration.historyLength must be an integer from 0"),
        (_rpc("SendMessage", {**_send("hi"), "configuration": {"historyLength": 1.5}}), -32602,
         "params.configuration.historyLength must be an integer"),
        (_rpc("SendMessage", {**_send("hi"), "configuration": {"acceptedOutputModes": "x"}}), -32602,
         "acceptedOutputModes must be a list of media types"),
        (_rpc("Fly" * 50_000, {}), -32601, "not found"),
        (_rpc("GetTask", {"id": "t"}, rid={"nested": [1]}), -32600, "the id must be a string, an integer or null"),
        (_rpc("GetTask", {"id": "t"}, rid=True), -32600, "the id must be"),
    ],
)  # fmt: skip
async def test_a_bad_a2a_request_is_a_json_rpc_error_saying_what(
    run_gateway: RunGateway, request_body: dict[str, Any], code: int, message: str
) -> None:
    async with run_gateway() as g, g.client(headers=JSON) as http:
        answer = await http.post("/a2a", content=json.dumps(request_body))
        assert answer.status_code == 200
        error = answer.json()["error"]
        assert error["code"] == code and message in error["message"] and len(error["message"]) < 1000
        assert g.model.count == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[" * 100_000, "nested too deeply"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": NaN}}', "NaN"),
        (b"\xff", "not UTF-8"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": ' + b"7" * 5000 + b"}}", "digits"),
    ],
)
async def test_unparsable_a2a_bodies_are_parse_errors(run_gateway: RunGateway, body: bytes, message: str) -> None:
    async with run_gateway() as g, g.client(headers=JSON) as http:
        error = (await http.post("/a2a", content=body)).json()["error"]
        assert error["code"] == -32700 and message in error["message"]


async def test_bad_websocket_messages_are_errors_and_the_socket_stays(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Reply("ok")) as g, open_websocket_url(g.url.replace("http", "ws") + "/ws") as ws:
        for raw, message in [
            ("[" * 100_000, "nested too deeply"),
            ('{"type": "message", "id": "1", "text": NaN}', "NaN"),
            (json.dumps({"type": "message", "id": "x" * 1000, "text": "hi"}), "at most 128 characters"),
            ('{"type": "message", "id": "2", "text": "a\\udfffb"}', "lone surrogate"),
        ]:
            await ws.send_message(raw)
            assert message in json.loads(await ws.get_message())["error"]
        await ws.send_message(json.dumps({"type": "message", "id": "3", "text": "still here?"}))
        with trio.fail_after(20):
            while json.loads(await ws.get_message())["type"] != "run_completed":
                pass


async def test_nothing_stored_is_lost_to_bad_requests(run_gateway: RunGateway) -> None:
    async with run_gateway(repeat=Reply("kept")) as g, g.client(headers=JSON) as http:
        sent = (await http.post("/a2a", json=_rpc("SendMessage", _send("remember me", contextId="c1")))).json()
        task_id = sent["result"]["task"]["id"]
        for bad in [b"[" * 100_000, json.dumps(_rpc("ListTasks", {"pageToken": 10**30})).encode(),
                    json.dumps(_rpc("ListTasks", {"contextId": {"x": 1}})).encode(),
                    json.dumps(_rpc("SendMessage", {**_send("x"), "configuration": "yes"})).encode()]:  # fmt: skip
            assert (await http.post("/a2a", content=bad)).status_code == 200
        got = (await http.post("/a2a", json=_rpc("GetTask", {"id": task_id}))).json()["result"]
        assert got["status"]["state"] == "TASK_STATE_COMPLETED" and got["artifacts"][0]["parts"][0]["text"] == "kept"
        listed = (await http.post("/a2a", json=_rpc("ListTasks", {"contextId": "c1"}))).json()["result"]
        assert listed["totalSize"] == 1
        # The task manager never crashed: the same process answers.
        assert g.model.count == 1


# --- fuzzing -------------------------------------------------------------------------------
#
# A valid request with one value somewhere in it replaced by a bad one (or its key
# dropped): each field's own check is reached, which random JSON rarely manages.

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63), st.floats(), st.text(max_size=20),
    st.sampled_from(["", "²", "٣", "-1", "9" * 30, "x" * 200, "\ud800", "TASK_STATE_NAPPING", "user", "text"]),
)  # fmt: skip
_json = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
)
_bad = st.one_of(_scalars, _json, st.just(DROP))

_SEND = {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"kind": "text", "text": "hi"}],
                     "contextId": "c1"}, "configuration": {"returnImmediately": True}}  # fmt: skip
_LIST = {"pageSize": 10, "pageToken": "0", "status": "TASK_STATE_COMPLETED", "contextId": "c1"}
_VALID_RPC = [
    _rpc("SendMessage", _SEND), _rpc("message/send", _SEND), _rpc("GetTask", {"id": "t1", "historyLength": 1}),
    _rpc("tasks/get", {"id": "t1"}), _rpc("CancelTask", {"id": "t1"}), _rpc("ListTasks", _LIST),
    _rpc("ListTasks", {}), _rpc("SubscribeToTask", {"id": "t1"}),
]  # fmt: skip
_VALID_CHAT = {
    "model": "default",
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    ],
    "stream": False,
    "stream_options": {"include_usage": True},
    "user": "ada",
}


_chat_requests = st.builds(mutated, st.just(_VALID_CHAT), st.integers(0, 1000), _bad)
_a2a_requests = st.builds(mutated, st.sampled_from(_VALID_RPC), st.integers(0, 1000), _bad)


#: The values that broke something once, or break parsers often.
_CLASSIC_BAD = [DROP, None, True, 0, -1, 2**64, 10**30, 1.5, 1e308, "", "²", "٣", "9" * 30, "x" * 300, "\ud800",
                "a\x00b", [], [1], {}, {"$ne": 1}, [[[[["deep"]]]]]]  # fmt: skip


async def test_every_field_with_every_classic_bad_value(run_gateway: RunGateway) -> None:
    """Each value in each valid request replaced by each classic bad value: never a server error."""
    requests = [("/v1/chat/completions", _VALID_CHAT)] + [("/a2a", rpc) for rpc in _VALID_RPC]
    failures = []
    table = {"rate_limit": {"requests": 1_000_000}}
    async with run_gateway(repeat=Reply("ok"), gateway_table=table) as g, g.client(headers=JSON) as http:
        for path, valid in requests:
            for choice in range(len(paths(valid))):
                for bad in _CLASSIC_BAD:
                    body = mutated(valid, choice, bad)
                    answer = await http.post(path, content=json.dumps(body))
                    internal = path == "/a2a" and '"code": -32603' in answer.text
                    if answer.status_code >= 500 or internal:
                        failures.append((path, body, answer.status_code, answer.text[:200]))
        assert failures == []
        # The task manager is the one that started: nothing crashed it.
        assert (await http.post("/a2a", json=_rpc("ListTasks", {}))).json()["result"]["totalSize"] >= 0


def _fuzz_in_thread(url: str, test: Any) -> None:
    with httpx.Client(base_url=url, headers=JSON, timeout=60) as http:
        test(http)


async def test_fuzzed_requests_never_get_a_server_error(run_gateway: RunGateway) -> None:
    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(chat=_chat_requests, rpc=_a2a_requests)
    def fuzz(http: httpx.Client, chat: Any, rpc: Any) -> None:
        for path, body in [("/v1/chat/completions", chat), ("/a2a", rpc)]:
            answer = http.post(path, content=json.dumps(body))  # lone surrogates go as \ud800 escapes
            assert answer.status_code < 500, (path, body, answer.text)
            if path == "/a2a" and answer.headers["content-type"].startswith("application/json"):
                assert answer.json().get("error", {}).get("code") != -32603, (body, answer.text)

    table = {"rate_limit": {"requests": 1_000_000}}
    async with run_gateway(repeat=Reply("fuzzed"), gateway_table=table) as g:
        await trio.to_thread.run_sync(_fuzz_in_thread, g.url, fuzz)
        async with g.client() as http:  # still answering, task manager included
            assert (await http.post("/a2a", json=_rpc("ListTasks", {}))).json()["result"]["totalSize"] >= 0


@pytest.mark.skipif(shutil.which("schemathesis") is None, reason="schemathesis is not installed (a test extra)")
async def test_schemathesis_finds_no_server_error_in_chat_and_a2a(run_gateway: RunGateway) -> None:
    """The daemon test runs schemathesis over every route; this one digs deeper into the two that take bodies."""
    table = {"rate_limit": {"requests": 1_000_000}}
    async with run_gateway(repeat=Reply("ok"), gateway_table=table) as g:
        result = await _schemathesis(g)
    assert result.returncode == 0, (result.stdout.decode() + result.stderr.decode())[-4000:]


async def _schemathesis(g: Gateway) -> Any:
    with trio.fail_after(600):
        return await trio.run_process(
            [sys.executable, "-m", "schemathesis.cli", "run", f"{g.url}/openapi.json", "--checks",
             "not_a_server_error", "--max-examples", "60", "--include-path", "/a2a", "--include-path",
             "/v1/chat/completions", "--request-timeout", "60", "--workers", "1", "--generation-database", "none",
             "--seed", "11"],
            capture_stdout=True, capture_stderr=True, check=False,
        )  # fmt: skip
