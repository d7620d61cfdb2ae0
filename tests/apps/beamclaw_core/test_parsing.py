"""Tool calls written as text, thinking tags, messages and session ids."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import beamclaw_core as core


@pytest.mark.parametrize(
    "text",
    [
        'Sure. <tool_call><name>jq</name><args>{"filter": "."}</args></tool_call>',
        '<toolcall>\n  <name> jq </name>\n  <args>{"filter": "."}</args>\n</toolcall>',
        '<invoke><name>jq</name><args>{"filter": "."}</args></invoke>',
        'Here:\n```json\n{"tool": "jq", "args": {"filter": "."}}\n```',
        'Sure. <tool_call>{"name": "jq", "arguments": {"filter": "."}}</tool_call>',
        '<toolcall>{"name": "jq", "arguments": "{\\"filter\\": \\".\\"}"}</toolcall>',
        '<function_calls><invoke name="jq"><parameter name="filter">.</parameter></invoke></function_calls>',
        'Here:\n```json\n{"name": "jq", "parameters": {"filter": "."}}\n```',
    ],
)
def test_each_text_form_gives_the_same_call(text: str) -> None:
    written = core.parse_text_tool_calls(text)
    assert [(c.name, json.loads(c.arguments)) for c in written.calls] == [("jq", {"filter": "."})]
    assert written.refused == {} and "jq" not in written.text and "<" not in written.text


def test_tags_inside_a_json_body_are_text() -> None:
    text = '<tool_call>{"name": "write_file", "arguments": {"content": "<name>x</name><args>{}</args>"}}</tool_call>'
    (call,) = core.parse_text_tool_calls(text).calls
    assert call.name == "write_file" and json.loads(call.arguments)["content"] == "<name>x</name><args>{}</args>"


def test_xml_wins_over_fenced_json() -> None:
    text = '<tool_call><name>a</name></tool_call>\n```json\n{"tool": "b", "args": {}}\n```'
    assert [c.name for c in core.parse_text_tool_calls(text).calls] == ["a"]


@pytest.mark.parametrize(
    "text",
    [
        'I could call {"name": "bash", "arguments": {"command": "ls"}} if you like.',
        'Or {"tool": "bash", "args": {"command": "ls"}}, written in a sentence.',
        '```json\n{"not": "a call"}\n```',
        '```json\n{"name": "Alice", "age": 3}\n```',
        "```json\n{broken\n```",
        '```python\n{"tool": "bash", "args": {}}\n```',
        '```\n{"tool": "bash", "args": {}}\n```',
    ],
)
def test_nothing_is_picked_out_of_free_text_or_other_blocks(text: str) -> None:
    written = core.parse_text_tool_calls(text)
    assert written.calls == () and written.text == text.strip()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<tool_call>not json</tool_call>", "not valid JSON"),
        ("<tool_call><args>{}</args></tool_call>", "names no tool"),
        ("<tool_call><name>jq</name><args>[1, 2]</args></tool_call>", "the args of jq must be a JSON object, not list"),
        ('<invoke><name>jq</name><args>"."</args></invoke>', "the args of jq must be a JSON object, not str"),
        ("<toolcall><name>jq</name><args>{oops</args></toolcall>", "not valid JSON"),
        ("<tool_call><name>jq</name><args>" + "[" * 100_000 + "</args></tool_call>", "not valid JSON"),
        ('```json\n{"tool": "jq", "args": 7}\n```', "the args of jq must be a JSON object, not int"),
        ('```json\n{"tool": 7}\n```', "names no tool"),
        ("<tool_call><name>rm -rf /</name></tool_call>", "is not a tool name"),
        ("<tool_call><name>" + "a" * 5000 + "</name></tool_call>", "is not a tool name"),
        ("<tool_call><tool_call><name>jq</name></tool_call></tool_call>", "inside another one"),
        ('Let me run it: <tool_call><name>jq</name><args>{"filter": "."}', "opened and never closed"),
        ('<invoke name="jq"><parameter name="filter">.</parameter>', "opened and never closed"),
    ],
)
def test_a_call_that_cannot_be_read_is_refused_with_the_reason(text: str, reason: str) -> None:
    written = core.parse_text_tool_calls(text)
    assert written.runnable == [] and len(written.calls) == 1
    (why,) = written.refused.values()
    assert reason in why and len(why) < 400


def test_a_reply_may_write_only_so_many_calls() -> None:
    text = "<tool_call><name>jq</name></tool_call>" * (core.MAX_TEXT_CALLS + 5)
    written = core.parse_text_tool_calls(text)
    assert len(written.runnable) == core.MAX_TEXT_CALLS
    (why,) = written.refused.values()
    assert "5 more were not read" in why
    assert len({call.id for call in written.calls}) == core.MAX_TEXT_CALLS + 1


@pytest.mark.parametrize(
    ("text", "visible"),
    [
        ("<think>step one</think>The answer.", "The answer."),
        ("<thinking>\nhmm\n</thinking>\n\nYes.", "Yes."),
        ("<REASONING>x</REASONING>ok", "ok"),
        ("Partial <think>never closed", "Partial"),
        ("No tags here", "No tags here"),
    ],
)
def test_thinking_is_stripped(text: str, visible: str) -> None:
    assert core.strip_thinking(text) == visible


def test_messages_round_trip_through_the_stored_format() -> None:
    message = core.Message("assistant", "hi", tool_calls=(core.ToolCall("c", "jq", '{"a": 1}'),))
    assert core.Message.from_record(message.to_record()) == message
    with pytest.raises(ValueError, match="format version 2; this BeamClaw reads 1"):
        core.Message.from_record('{"v": 2, "role": "user", "content": "x"}')


def test_session_ids_are_sha256_of_user_agent_and_channel() -> None:
    import hashlib

    assert core.session_id("u", "a") == hashlib.sha256(b"u\x00a").hexdigest()
    assert core.session_id("u", "a", "tg") == core.session_id("u", "a")
    assert core.session_id("u", "a", "tg", per_channel=True) == hashlib.sha256(b"u\x00a\x00tg").hexdigest()


def test_bad_core_config_names_the_key() -> None:
    base = {"providers": {"p": {"base_url": "http://x", "model": "m"}}, "default_provider": "p"}
    with pytest.raises(ValueError, match=r"core.agentic_loop.max_tool_iterations: expected an integer, got 'ten'"):
        core.parse_core_config({**base, "agentic_loop": {"max_tool_iterations": "ten"}})
    with pytest.raises(ValueError, match=r"core.providers.p: unknown key 'modle'"):
        core.parse_core_config({"providers": {"p": {"base_url": "x", "modle": "m"}}, "default_provider": "p"})
    with pytest.raises(ValueError, match=r"core.providers.p.api_key: a secret must be written"):
        core.parse_core_config(
            {"providers": {"p": {"base_url": "x", "model": "m", "api_key": "sk-x"}}, "default_provider": "p"}
        )
    with pytest.raises(ValueError, match=r"core.default_provider is 'q'"):
        core.parse_core_config({**base, "default_provider": "q"})
    with pytest.raises(ValueError, match=r"unknown autonomy level 'yolo'"):
        core.parse_core_config({**base, "autonomy_level": "yolo"})


def test_session_sharing_is_shared_or_per_channel_and_reads_its_old_name() -> None:
    base = {"providers": {"p": {"base_url": "http://x", "model": "m"}}, "default_provider": "p"}
    assert core.parse_core_config(base).session_sharing == "shared"
    assert core.parse_core_config({**base, "session_sharing": "per_user"}).session_sharing == "shared"
    assert core.parse_core_config({**base, "session_sharing": "per_channel"}).session_sharing == "per_channel"
    with pytest.raises(ValueError, match=r"core.session_sharing"):
        core.parse_core_config({**base, "session_sharing": "per_agent"})


_FRAGMENTS = (
    "<tool_call>", "</tool_call>", "<toolcall>", "</toolcall>", "<think>", "</think>", "<THINKING>", "</reasoning>",
    '<invoke name="jq">', "</invoke>", '<parameter name="filter">', "</parameter>", "```json\n", "```", "\n",
    '{"name": "jq", "arguments": {}}', "{", "x", " ", "\\",
)  # fmt: skip


@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=60))
def test_any_mix_of_tags_parses_and_hides_every_thinking_block(parts: list[str]) -> None:
    text = "".join(parts)
    written = core.parse_text_tool_calls(text)
    visible = core.strip_thinking(text)
    calls = written.runnable
    assert all(call.name == "jq" and isinstance(json.loads(call.arguments), dict) for call in calls)
    assert len(calls) <= text.count('"name": "jq"') + text.count('name="jq"')
    assert all(call.name in ("jq", "unreadable_tool_call") for call in written.calls)
    assert len(written.text) <= len(text)
    # Whatever follows an opening thinking tag is hidden, closed or not.
    lowered = visible.lower()
    assert "<think>" not in lowered and "<thinking>" not in lowered and "<reasoning>" not in lowered


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>" * 100_000,  # each one unclosed: a backtracking engine scans to the end from every one
        "<toolcall> " * 100_000 + "</tool_call>",
        '<invoke name="a">' * 60_000,
        "```json\n" * 120_000,
        "<think>" + "</thinkin" * 100_000,
    ],
)
def test_hostile_megabyte_replies_are_parsed_in_one_pass(text: str) -> None:
    written = core.parse_text_tool_calls(text)
    assert written.runnable == []  # an unclosed tag is one refused call, the text left as it was
    assert len(written.refused) == len(written.calls) <= 1
    assert written.text == text.strip()
    assert core.strip_thinking(text) in ("", text.strip())


@given(
    st.lists(st.sampled_from((*_FRAGMENTS[4:8], "<", "<thi", "nk>", "</th", "ink>", "a", " ", "\n", "İ")), max_size=40),
    st.data(),
)
def test_streamed_thinking_is_hidden_as_in_the_whole_reply(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    stream = core.ThinkingFilter()
    shown = "".join(stream.feed(piece) for piece in pieces) + stream.flush()
    assert shown.strip() == core.strip_thinking(text)
