"""The tool policy of the bridge: allow/deny rules with wildcards, the first match decides."""

from __future__ import annotations

import pytest

from beamclaw_base import ConfigError
from beamclaw_sandbox import PolicyConfig, PolicyRule, parse_sandbox_config


def test_the_reference_defaults() -> None:
    policy = parse_sandbox_config({}).policy
    assert policy.default_action == "allow"
    assert policy.allows("read_file") and policy.allows("curl") and policy.allows("web_search")
    assert not policy.allows("bash") and not policy.allows("terminal")


def test_wildcards_and_the_first_matching_rule_decide() -> None:
    policy = PolicyConfig(
        "deny",
        [PolicyRule("deny", "mcp_admin_*"), PolicyRule("allow", "mcp_*"), PolicyRule("allow", "read_?ile")],
    )
    assert policy.allows("mcp_weather_get")
    assert not policy.allows("mcp_admin_drop")  # the deny comes first
    assert policy.allows("read_file") and not policy.allows("read_files")
    assert not policy.allows("write_file")  # no rule: the default
    assert not policy.allows("MCP_weather")  # case matters: tool names are exact


def test_default_allow_with_deny_rules() -> None:
    policy = parse_sandbox_config(
        {"policy": {"default_action": "allow", "rules": [{"action": "deny", "tool": "*_file"}]}}
    ).policy
    assert not policy.allows("write_file") and not policy.allows("delete_file")
    assert policy.allows("jq")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"policy": {"default_action": "maybe"}}, "sandbox.policy.default_action"),
        ({"policy": {"rules": [{"action": "permit", "tool": "x"}]}}, "sandbox.policy.rules"),
        ({"policy": {"rules": [{"action": "allow"}]}}, "sandbox.policy.rules"),
        ({"policy": {"rule": []}}, "unknown key 'rule'"),
    ],
)
def test_bad_policy_tables_name_the_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        parse_sandbox_config(table)


def test_exec_asks_when_it_could_write_the_workspace_or_reach_out() -> None:
    """A writable workspace lets a script rewrite AGENTS.md or MEMORY.md: as bash, it asks."""
    import beamclaw_sandbox as sandbox

    def tool(**table: object) -> sandbox.ExecTool:
        return sandbox.ExecTool(sandbox.parse_sandbox_config({"enabled": True, **table}))

    assert not tool(workspace_mount="ro").requires_approval
    assert not tool(workspace_mount="none").requires_approval
    assert tool(workspace_mount="rw").requires_approval
    assert tool(network="bridge").requires_approval
