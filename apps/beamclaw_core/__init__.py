"""The agent brain: sessions that survive crashes, the agentic loop, providers and policy.

Each conversation is a `Session` process (history, turn queue) and a `Loop` state
machine under their own rest_for_one supervisor: a crashing loop is restarted and the
conversation goes on, and every tool call in a history sent to a model is answered.
History is written to the store (SQLite or PostgreSQL) before it is acknowledged, so it also survives the whole
daemon being killed. Channels use `open_session`, `send_message` (or `submit`) and the
`Channel` protocol.
"""

from beamclaw_base import StoreError, StoreRefused, StoreUnavailable

from ._api import (
    CANONICAL_USER_ENV,
    MAX_USER_ID,
    ContextUsage,
    InvalidUserId,
    SessionHandle,
    SessionNotFound,
    SessionSummary,
    answer_approval,
    canonical_user,
    channel_user,
    check_user_id,
    context_usage,
    find_session,
    history,
    list_sessions,
    open_session,
    paired_agent,
    pairing_code,
    reconfigure,
    reopen_session,
    reset_session,
    running_sessions,
    send_message,
    stop_session,
    stop_turn,
    submit,
)
from ._approval import Decision, decide
from ._budget import BudgetExceeded, used_today
from ._channel import BaseChannel, Channel, CollectingChannel, ReplyOnlyChannel
from ._cleaner import sweep_expired
from ._compaction import CONTEXT_WINDOWS, SUMMARY_HEADER, context_window
from ._config import AgentConfig, AgenticLoopConfig, CoreConfig, ProviderConfig, parse_core_config
from ._history import INTERRUPTED, answered_history
from ._http_client import HttpClientOwner, owned_http_client
from ._messages import MAX_USER_CHARS, Message, ToolCall, estimate_tokens, truncated
from ._outbound import Reach, outbound, outbound_channel
from ._pairing import (
    ALPHABET as PAIRING_ALPHABET,
)
from ._pairing import (
    Paired,
    PairingError,
    PendingCode,
    allowed_agent,
    approve,
    link,
    paired,
    pending,
    request_code,
    revoke,
    speaker,
    unlink,
)
from ._provider import (
    Capabilities,
    Completion,
    OpenAICompatProvider,
    Provider,
    ProviderError,
    ProviderNotConfigured,
    Usage,
)
from ._session import SessionInfo, session_id
from ._sessions import SESSIONS_SUP, OwnedElsewhere
from ._skills import InstallStep, Skill, SkillError, discover, parse_skill, skill_places
from ._store import SCHEMA, SCHEMA_VERSION, SESSIONS_FILE, open_session_store
from ._tool_parsing import MAX_TEXT_CALLS, TextToolCalls, ThinkingFilter, parse_text_tool_calls, strip_thinking
from ._tree import supervision_tree
from ._turn import Turn, TurnError, TurnResult
from ._workspace import (
    CONTEXT_FILES,
    SEEDED_FILES,
    USER_FILES,
    InvalidAgentName,
    UnknownAgent,
    Workspace,
    agent_names,
    check_agent_exists,
    check_agent_name,
    template,
    user_folder_name,
    user_workspace,
)

__all__ = [
    "OwnedElsewhere",
    "answer_approval",
    "BaseChannel",
    "ReplyOnlyChannel",
    "Reach",
    "outbound",
    "outbound_channel",
    "CONTEXT_FILES",
    "INTERRUPTED",
    "answered_history",
    "PAIRING_ALPHABET",
    "SEEDED_FILES",
    "USER_FILES",
    "SESSIONS_SUP",
    "InstallStep",
    "InvalidAgentName",
    "MAX_TEXT_CALLS",
    "MAX_USER_ID",
    "InvalidUserId",
    "check_user_id",
    "CANONICAL_USER_ENV",
    "canonical_user",
    "channel_user",
    "link",
    "unlink",
    "speaker",
    "UnknownAgent",
    "agent_names",
    "check_agent_exists",
    "Paired",
    "PairingError",
    "PendingCode",
    "Skill",
    "SkillError",
    "Workspace",
    "allowed_agent",
    "approve",
    "check_agent_name",
    "discover",
    "open_session_store",
    "paired",
    "parse_skill",
    "pending",
    "request_code",
    "revoke",
    "skill_places",
    "template",
    "user_folder_name",
    "user_workspace",
    "CONTEXT_WINDOWS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SESSIONS_FILE",
    "SUMMARY_HEADER",
    "AgentConfig",
    "AgenticLoopConfig",
    "BudgetExceeded",
    "Channel",
    "CollectingChannel",
    "Completion",
    "ContextUsage",
    "HttpClientOwner",
    "CoreConfig",
    "Decision",
    "MAX_USER_CHARS",
    "Message",
    "OpenAICompatProvider",
    "Provider",
    "Capabilities",
    "ProviderConfig",
    "ProviderError",
    "ProviderNotConfigured",
    "SessionHandle",
    "SessionNotFound",
    "SessionSummary",
    "find_session",
    "list_sessions",
    "reopen_session",
    "reconfigure",
    "SessionInfo",
    "StoreError",
    "StoreRefused",
    "StoreUnavailable",
    "TextToolCalls",
    "ToolCall",
    "Turn",
    "TurnError",
    "TurnResult",
    "Usage",
    "context_usage",
    "context_window",
    "decide",
    "estimate_tokens",
    "history",
    "open_session",
    "owned_http_client",
    "paired_agent",
    "pairing_code",
    "parse_core_config",
    "parse_text_tool_calls",
    "reset_session",
    "running_sessions",
    "send_message",
    "session_id",
    "stop_session",
    "stop_turn",
    "strip_thinking",
    "ThinkingFilter",
    "submit",
    "supervision_tree",
    "truncated",
    "sweep_expired",
    "used_today",
]
