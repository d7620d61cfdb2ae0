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
        'Sure. <tool_call>{"name": "jq", "arguments": {"filter": "."}}</tool_call>',
        '<toolcall>{"name": "jq", "arguments": "{\\"filter\\": \\".\\"}"}</toolcall>',
        '<function_calls><invoke name="jq"><parameter name="filter">.</parameter></invoke></function_calls>',
        'Here:\n```json\n{"name": "jq", "parameters": {"filter": "."}}\n```',
    ],
)
def test_each_text_form_gives_the_same_call(text: str) -> None:
    calls, rest = core.parse_text_tool_calls(text)
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("jq", {"filter": "."})]
    assert "jq" not in rest


def test_xml_wins_over_fenced_json() -> None:
    text = '<tool_call>{"name": "a", "arguments": {}}</tool_call>\n```json\n{"name": "b", "arguments": {}}\n```'
    assert [c.name for c in core.parse_text_tool_calls(text)[0]] == ["a"]


@pytest.mark.parametrize(
    "text",
    [
        'I could call {"name": "bash", "arguments": {"command": "ls"}} if you like.',
        '```json\n{"not": "a call"}\n```',
        "```json\n{broken\n```",
        '```python\n{"name": "bash", "arguments": {}}\n```',
        "<tool_call>not json</tool_call>",
    ],
)
def test_nothing_is_picked_out_of_free_text_or_other_blocks(text: str) -> None:
    assert core.parse_text_tool_calls(text)[0] == []


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
    calls, rest = core.parse_text_tool_calls(text)
    visible = core.strip_thinking(text)
    assert all(call.name == "jq" and isinstance(json.loads(call.arguments), dict) for call in calls)
    assert len(calls) <= text.count('"name": "jq"') + text.count('name="jq"')
    assert len(rest) <= len(text)
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
    calls, rest = core.parse_text_tool_calls(text)
    assert calls == []
    assert rest == text.strip()
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
