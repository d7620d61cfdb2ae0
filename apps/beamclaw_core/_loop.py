"""The agentic loop: a state machine that turns one message into an answer.

    idle -> compacting -> streaming -> awaiting_approval -> executing_tools -> streaming ...
         -> finalizing -> idle

It is the transient half of the per-session pair, and it keeps nothing the session
does not also have: it re-reads the history before every model call, and asks the
session for the next turn when it is idle. So when it crashes, the supervisor starts
a fresh one that simply carries on with the queue; the session has already told the
user that the crashed turn failed. Expected failures (the model unreachable, a key
missing, the budget used up) are not crashes: they end the turn with a clear reply.
"""

from __future__ import annotations

import enum
import json
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, Final

import attrs
import httpx
import trio
from loguru import logger

import supervision as sv
from beamclaw_obs import emit, scrub, scrub_async
from beamclaw_sandbox import session_jails
from beamclaw_tools import Autonomy, Tool, ToolContext, ToolResult, ToolSession, list_tools, refusal_reason, run_tool

from ._approval import Decision, allow_keys, decide, describe_keys
from ._budget import BudgetExceeded, Reservation, record_tokens, reserve, settle, usage_record
from ._channel import ReplyOnlyChannel
from ._compaction import compact, context_window
from ._config import ProviderConfig
from ._drafts import Drafter, tell
from ._http_client import owned_http_client
from ._memory import flush_memory, keep_fresh, recall, remember_exchange
from ._messages import Message, ToolCall, estimate_tokens
from ._provider import Completion, Provider, ProviderError, ProviderNotConfigured
from ._runtime import HTTP_CLIENT, Runtime
from ._session import PersistError, SessionInfo
from ._session_messages import (
    Allowlist,
    Append,
    ApprovalAnswered,
    AttachLoop,
    AwaitingApproval,
    CloseOpenCalls,
    FinishTurn,
    History,
    IdleCompact,
    Replace,
    StopWaiting,
    TakeTurn,
    TurnAvailable,
)
from ._store_requests import RecordTokens
from ._system_prompt import system_prompt
from ._tool_parsing import parse_text_tool_calls, strip_thinking
from ._turn import Turn, TurnError, TurnResult
from ._workspace import user_workspace

_STORAGE: Final = TurnResult("", ok=False, error=TurnError.STORAGE, retry_after=1.0)


@enum.unique
class LoopState(enum.Enum):
    """Where the loop is: idle between turns, else at one step of the turn."""

    IDLE = "idle"
    COMPACTING = "compacting"
    STREAMING = "streaming"
    AWAITING_APPROVAL = "awaiting_approval"
    EXECUTING_TOOLS = "executing_tools"
    FINALIZING = "finalizing"


@enum.unique
class _Step(enum.Enum):
    """The loop's own events: each does one step of the turn (`NEXT`: take the next turn)."""

    NEXT = "next"
    COMPACT = "compact"
    CALL_MODEL = "call_model"
    APPROVE = "approve"
    EXECUTE = "execute"
    FINALIZE = "finalize"


#: The answer to a turn the user stopped.
STOPPED: Final = "Stopped."


@attrs.define
class _Progress:
    """What the loop knows about the turn in progress."""

    turn: Turn
    started: float = attrs.field(factory=time.time)
    #: When the loop took the turn, on the monotonic clock (for ``total_duration_ms``).
    began: float = attrs.field(factory=time.perf_counter)
    rounds: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: The last model call's tokens, saved with the reply it wrote.
    usage: RecordTokens | None = None
    pending: list[ToolCall] = attrs.field(factory=list)
    decisions: dict[str, tuple[bool, str]] = attrs.field(factory=dict)
    tools: dict[str, Tool] = attrs.field(factory=dict)
    asking: ToolCall | None = None
    reply: str = ""
    #: What memory recalled for the turn's message (``auto_context``), once looked up.
    recalled: str | None = None
    #: Set when the turn failed: what the result reports besides the reply text.
    failure: TurnResult | None = None


@attrs.define
class _Data:
    info: SessionInfo
    runtime: Runtime
    client: httpx.AsyncClient
    progress: _Progress | None = None
    _provider: Provider | None = None
    _chosen: tuple[str, ProviderConfig] | None = None
    #: The tools offered to the model last, their schemas and JSON's length: kept while the
    #: same tools are offered, so the provider sends the same list (serialised once).
    _schemas: tuple[tuple[Tool, ...], list[dict[str, Any]], int] = ((), [], 2)

    def tool_schemas(self, tools: Iterable[Tool]) -> tuple[list[dict[str, Any]], int]:
        """The schemas of the *tools* the agent's autonomy allows, and their JSON's length."""
        autonomy = self.autonomy
        offered = tuple(t for t in tools if t.min_autonomy <= autonomy)
        kept, schemas, chars = self._schemas
        if len(kept) != len(offered) or any(a is not b for a, b in zip(kept, offered, strict=True)):
            schemas = [t.definition.to_openai() for t in offered]
            chars = len(json.dumps(schemas))
            self._schemas = (offered, schemas, chars)
        return schemas, chars

    @property
    def session(self) -> sv.ViaName:
        return self.runtime.session_dest(self.info.id)

    @property
    def autonomy(self) -> Autonomy:
        """The agent's autonomy, lowered for this turn when it asks for less (a scheduled job)."""
        autonomy = self.runtime.config.autonomy
        turn_autonomy = self.progress.turn.autonomy if self.progress is not None else None
        return autonomy if turn_autonomy is None else min(autonomy, turn_autonomy)

    @property
    def provider(self) -> Provider:
        """The agent's provider as configured now: a reload may have changed it since the last call."""
        chosen = self.runtime.config.provider_for(self.info.agent_id)
        if self._provider is None or chosen != self._chosen:
            self._provider, self._chosen = self.runtime.provider(self.client, self.info.agent_id), chosen
        return self._provider

    @property
    def summariser(self) -> Provider:
        """The provider of compaction's summary and the memory flush (``compaction_provider``)."""
        return self.runtime.summariser(self.client, self.info.agent_id)

    def window(self) -> int:
        """The context window of the agent's model, in tokens."""
        provider = self.provider
        return context_window(provider.model, provider.capabilities().context_window)


def _model_failure(exc: ProviderError) -> TurnResult:
    """How a failed model call ends the turn: its kind, the model's status, when to retry."""
    error = TurnError.NOT_CONFIGURED if isinstance(exc, ProviderNotConfigured) else TurnError.MODEL
    return TurnResult("", ok=False, error=error, model_status=exc.status, retry_after=exc.retry_after)


async def _unwatched(text: str) -> None:
    """Nothing: a piece of a reply nobody watches grow (the turn's result carries it whole)."""


#: How long a step's end gives the store to record tokens no reply carried (shielded:
#: the loop may be stopping).
_RECORD_GRACE: Final = 5.0


async def _record_unsaved_tokens(progress: _Progress) -> None:
    """Record alone the tokens of a model call whose reply never reached the session (the
    turn stopped or the loop crashed in between, the session gone): they were spent."""
    usage, progress.usage = progress.usage, None
    if usage is not None:
        with trio.move_on_after(_RECORD_GRACE, shield=True):
            await record_tokens(usage)


#: The most of a call's arguments a preview reads (it shows far less).
_PREVIEW_INPUT: Final = 10_000


def _args_preview(call: ToolCall, limit: int = 300) -> str:
    """The call's arguments as shown to a user or logged: decoded before they are scrubbed.

    The raw text is the model's JSON, in which a key can hide behind escapes
    (``\\u0073k-or-…``) that the user's screen, or a log reader, would decode.
    """
    try:
        text = json.dumps(json.loads(call.arguments), ensure_ascii=False)
    except (ValueError, RecursionError):
        text = call.arguments
    text = scrub(text[:_PREVIEW_INPUT])
    return text if len(text) <= limit else text[:limit] + "..."


def _script_dispatcher(
    data: _Data, tools: dict[str, Tool], session: ToolSession, context: ToolContext
) -> Callable[[str, dict[str, Any]], Awaitable[ToolResult]]:
    """What a sandboxed script's ``call_tool`` reaches (``exec``'s bridge; its policy has
    already allowed the tool): this turn's tools, under the autonomy and approvals of the
    model's own calls. A tool that would need the user's approval is refused, since a
    script cannot ask; *context* has no dispatcher, so a tool never re-enters one."""

    async def call_tool(name: str, arguments: dict[str, Any]) -> ToolResult:
        tool = tools.get(name)
        if tool is None:
            return ToolResult(f"no tool {name!r} in this conversation", is_error=True)
        refused = refusal_reason(tool, arguments, context)
        if refused is not None:
            return ToolResult(refused, is_error=True)
        allowlist = await sv.call(data.session, Allowlist())
        decision, reason = decide(tool, data.autonomy, allowlist, arguments)
        if decision is not Decision.APPROVE:
            return ToolResult(reason or f"{name} needs the user's approval, which a script cannot ask for", True)
        emit("tool_call_start", session_id=data.info.id, tool=name, via="sandbox")
        result = await run_tool(tool, arguments, session, context)
        return ToolResult(scrub(result.text), result.is_error)

    return call_tool


def _skill_dirs(data: _Data) -> tuple[Path, ...]:
    """The skill folders outside the workspace, which a jailed command may read (to run a
    skill's scripts): the bundled ones and the data dir's ``skills``, never more of it."""
    bundled = data.runtime.config.bundled_skills_dir
    return (*([Path(bundled)] if bundled else []), data.runtime.data_dir / "skills")


def _tool_context(data: _Data) -> ToolContext:
    """Where this session's tools act, with the config as it is now (a reload applies at
    the next call); the jails and the script dispatcher are added when the calls run."""
    info, runtime = data.info, data.runtime
    return ToolContext(
        workspace=runtime.workspace(info.agent_id),
        data_dir=runtime.data_dir,
        readonly_dirs=_skill_dirs(data),
        single_user=runtime.config.single_user(info.agent_id),
    )


class Loop(sv.StateMachine):
    async def init(self, info: SessionInfo, runtime: Runtime) -> tuple[LoopState, _Data, list[sv.NextEvent]]:
        data = _Data(info, runtime, await owned_http_client(HTTP_CLIENT))
        busy = await sv.call(data.session, AttachLoop(sv.self()))
        emit("agent_start", session_id=info.id, agent_id=info.agent_id, model=data.provider.model)
        return LoopState.IDLE, data, [sv.NextEvent(_Step.NEXT)] if busy else []

    async def handle_event(self, event: sv.Event, state: LoopState, data: _Data) -> Any:
        content = event.content
        if state is LoopState.IDLE:
            match content:
                case TurnAvailable() | _Step.NEXT:
                    return await self._start(data)
                case IdleCompact(above_pct, to_pct):
                    await self._idle_compact(data, above_pct, to_pct)
            return sv.KeepState()
        if event.type is sv.INTERNAL:
            step = {
                _Step.COMPACT: self._compact,
                _Step.CALL_MODEL: self._call_model,
                _Step.APPROVE: self._approve_next,
                _Step.EXECUTE: self._execute,
                _Step.FINALIZE: self._finalize,
            }[content]
            progress = data.progress
            if progress is None or content is _Step.FINALIZE:
                return await step(data)
            if progress.turn.stop_requested:
                return await self._stopped(data)
            try:
                with progress.turn.working() as work:  # /stop cancels it: the turn ends where it stands
                    result = await step(data)
            finally:
                await _record_unsaved_tokens(progress)
            return await self._stopped(data) if work.cancelled_caught else result
        if state is LoopState.AWAITING_APPROVAL:
            match content:
                case StopWaiting(turn_id) if (
                    event.type is sv.CAST and data.progress and turn_id == data.progress.turn.id
                ):
                    await sv.call(data.session, AwaitingApproval(None))
                    return await self._stopped(data)
                case ApprovalAnswered(word) if event.type is sv.CAST:
                    return self._resolve(data, word in {"yes", "always"}, f"the user answered {word}")
            if event.type is sv.STATE_TIMEOUT:
                await sv.call(data.session, AwaitingApproval(None))
                assert data.progress is not None
                await tell(
                    data.progress.turn.channel.send, "No answer to the approval request; the tool call was denied."
                )
                return self._resolve(data, False, "the approval request timed out")
        return sv.KeepState()  # turns arriving while busy wait in the session's queue

    # --- idle -> compacting ---------------------------------------------------------------

    async def _start(self, data: _Data) -> Any:
        turn = await sv.call(data.session, TakeTurn())
        if turn is None:
            return sv.KeepState()
        data.progress = _Progress(turn)
        await tell(turn.channel.send_typing)
        try:
            await sv.call(data.session, Append([Message("user", scrub(turn.text), images=turn.images)]))
        except PersistError as exc:
            text = f"Your message could not be saved, so it was not sent to the model: {exc}"
            return self._fail(data, text, _STORAGE)
        return sv.NextState(LoopState.COMPACTING, data, sv.NextEvent(_Step.COMPACT))

    async def _idle_compact(self, data: _Data, above_pct: int, to_pct: int) -> None:
        """Summarise a long history while nobody waits (the sleeper asks before the
        conversation sleeps). Unlike a turn's compaction, a model that fails to summarise
        changes nothing: nothing forces the history shorter now."""
        history = await sv.call(data.session, History())
        result = await compact(history, data.summariser, data.window(), above_pct, to_pct, flush=self._flusher(data))
        if result is None or result.method != "summary":
            return
        try:
            await sv.call(data.session, Replace(result.history))
        except PersistError:
            logger.warning("session {}: the idle compaction could not be saved", data.info.id[:12])
            return
        emit(
            "maintenance_compact_complete", session_id=data.info.id, reason="idle", tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
        )  # fmt: skip

    @staticmethod
    def _flusher(data: _Data) -> Callable[[list[Message]], Awaitable[None]] | None:
        """The memory flush compaction runs first, unless it is turned off."""
        where = data.runtime.config.agentic_loop.memory_flush
        if where == "off":
            return None
        info, runtime = data.info, data.runtime
        single = runtime.config.single_user(info.agent_id)
        workspace = user_workspace(runtime.data_dir, info.agent_id, info.user_id, single_user=single)

        async def flush(older: list[Message]) -> None:
            await flush_memory(data.info, workspace, data.summariser, older, where)

        return flush

    # --- compacting -> streaming ----------------------------------------------------------

    async def _compact(self, data: _Data) -> Any:
        history = await sv.call(data.session, History())
        loop = data.runtime.config.agentic_loop
        threshold, target = loop.compaction_threshold_pct, loop.compaction_target_pct
        result = await compact(history, data.summariser, data.window(), threshold, target, flush=self._flusher(data))
        if result is not None:
            try:
                await sv.call(data.session, Replace(result.history))
            except PersistError as exc:
                return self._fail(data, f"The conversation could not be compacted and saved: {exc}", _STORAGE)
            emit(
                "compaction_complete", session_id=data.info.id, method=result.method,
                tokens_before=result.tokens_before, tokens_after=result.tokens_after,
            )  # fmt: skip
        return sv.NextState(LoopState.STREAMING, data, sv.NextEvent(_Step.CALL_MODEL))

    # --- streaming ------------------------------------------------------------------------

    @staticmethod
    async def _load_tools(progress: _Progress) -> None:
        """The tools of this round, read once: the approval and execution steps use the same."""
        try:
            progress.tools = {t.definition.name: t for t in await list_tools()}
        except sv.NoProc:
            progress.tools = {}  # the tools app is not running: the model answers without tools

    @staticmethod
    async def _with_recall(data: _Data, history: list[Message]) -> list[Message]:
        """*history* as this call sends it, with what memory recalls for the turn's message
        (``auto_context``) after that message's text: quoted data, in the model's context
        for the turn's calls only, never in the stored history."""
        progress = data.progress
        assert progress is not None
        if progress.recalled is None:  # once a turn: its tool rounds send the same
            limit = data.runtime.config.agentic_loop.auto_context_limit
            progress.recalled = await recall(data.info, scrub(progress.turn.text), limit)
        users = [index for index, message in enumerate(history) if message.role == "user"]
        if not progress.recalled or not users:
            return history
        at = users[-1]
        asked = attrs.evolve(history[at], content=f"{history[at].content}\n\n{progress.recalled}")
        return [*history[:at], asked, *history[at + 1 :]]

    async def _call_model(self, data: _Data) -> Any:
        progress = data.progress
        assert progress is not None
        config = data.runtime.config
        final_round = progress.rounds >= config.agentic_loop.max_tool_iterations
        history = await sv.call(data.session, History())
        if config.agentic_loop.auto_context:
            history = await self._with_recall(data, history)
        messages = [
            Message("system", await system_prompt(data.runtime, data.info.agent_id, data.info.user_id)),
            *history,
        ]
        await self._load_tools(progress)
        tools, tool_chars = ([], 0) if final_round else data.tool_schemas(progress.tools.values())
        estimate = estimate_tokens(messages) + tool_chars // 4 + config.budget_completion_reserve
        try:
            reservation = await reserve(data.info.agent_id, estimate, config.budget_for(data.info.agent_id))
        except BudgetExceeded as exc:
            return self._fail(data, str(exc), TurnResult("", ok=False, error=TurnError.BUDGET))
        emit("llm_request", session_id=data.info.id, model=data.provider.model, messages=len(messages),
             tools=len(tools), round=progress.rounds)  # fmt: skip
        completion = await self._stream(data, reservation, messages, tools)
        if isinstance(completion, ProviderError):
            text = f"I could not get an answer from the model: {completion}"
            return self._fail(data, text, _model_failure(completion))
        return await self._after_completion(data, completion, final_round)

    async def _stream(
        self, data: _Data, reservation: Reservation | None, messages: list[Message], tools: list[dict[str, Any]]
    ) -> Completion | ProviderError:
        progress = data.progress
        assert progress is not None
        drafter = Drafter(progress.turn.channel, data.runtime.config.agentic_loop.stream_chunk_chars)
        started = time.perf_counter()

        async def retrying(attempt: int, attempts: int, delay: float, why: str) -> None:
            note = f"{why}; trying again in {delay:.1f} s (attempt {attempt + 1} of {attempts})"
            await tell(progress.turn.channel.progress, note)

        try:
            # Streamed even when nobody watches the reply grow (its pieces then go nowhere): a
            # whole reply sends nothing until the model has written all of it, so only a
            # stream's read timeout tells a stalled server (asked again) from a slow model.
            on_text = _unwatched if isinstance(progress.turn.channel, ReplyOnlyChannel) else drafter.feed
            completion = await data.provider.stream(messages, tools, on_text, retrying)
        except ProviderError as exc:
            await drafter.finish()
            await settle(reservation, 0)
            emit("llm_response", session_id=data.info.id, model=data.provider.model, status="error",
                 error=str(exc), duration_ms=round((time.perf_counter() - started) * 1000, 1))  # fmt: skip
            return exc
        if completion.tool_calls:  # a final reply is shown whole by finalize_draft
            await drafter.finish()
        usage = completion.usage
        used = usage.total if usage else estimate_tokens(messages) + len(completion.content) // 4
        await settle(reservation, used)
        if usage:  # else estimated, as the budget does
            progress.usage = usage_record(data.info.agent_id, usage.prompt_tokens, usage.completion_tokens)
        else:
            written = len(completion.content) // 4
            progress.usage = usage_record(data.info.agent_id, used - written, written)
        progress.prompt_tokens += usage.prompt_tokens if usage else 0
        progress.completion_tokens += usage.completion_tokens if usage else 0
        emit(
            "llm_response", session_id=data.info.id, model=completion.model or data.provider.model, status="ok",
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            tool_calls=len(completion.tool_calls),
        )  # fmt: skip
        return completion

    async def _after_completion(self, data: _Data, completion: Completion, final_round: bool) -> Any:
        progress = data.progress
        assert progress is not None
        # Reasoning is dropped before calls are read from the text: a call the model only
        # thought about, or one quoted in its reasoning from a hostile page, is not run.
        visible = strip_thinking(await scrub_async(completion.content))
        calls = list(completion.tool_calls)
        refused: dict[str, str] = {}
        if not calls and not final_round:
            written = parse_text_tool_calls(visible)
            calls, visible, refused = list(written.calls), written.text, written.refused
        if calls and not final_round:
            message = Message("assistant", visible, tool_calls=tuple(calls))
            if failed := await self._save_reply(data, message):
                return failed
            progress.pending = calls
            # A call written as text that could not be read is answered with why, never run.
            progress.decisions = {call_id: (False, reason) for call_id, reason in refused.items()}
            progress.rounds += 1
            return sv.NextState(LoopState.AWAITING_APPROVAL, data, sv.NextEvent(_Step.APPROVE))
        if not visible:
            limit = data.runtime.config.agentic_loop.max_tool_iterations
            visible = (
                f"I stopped after {limit} rounds of tool calls without reaching an answer."
                if final_round and progress.rounds
                else "The model returned an empty reply."
            )
        if failed := await self._save_reply(data, Message("assistant", visible)):
            return failed
        progress.reply = visible
        return sv.NextState(LoopState.FINALIZING, data, sv.NextEvent(_Step.FINALIZE))

    async def _save_reply(self, data: _Data, message: Message) -> Any:
        """Append the model's *message* with the call's tokens; None when saved, else the failure."""
        progress = data.progress
        assert progress is not None
        usage = progress.usage
        try:
            await sv.call(data.session, Append([message], usage))
        except trio.Cancelled:
            progress.usage = None  # sent: the session saves the tokens with the reply
            raise
        except PersistError as exc:
            progress.usage = None
            if usage is not None:  # the tokens were spent even if the reply is lost
                await record_tokens(usage)
            return self._fail(data, f"The model's reply could not be saved: {exc}", _STORAGE)
        # Any other failure (the session gone) leaves them to _record_unsaved_tokens.
        progress.usage = None
        return None

    # --- awaiting_approval ----------------------------------------------------------------

    async def _approve_next(self, data: _Data) -> Any:
        progress = data.progress
        assert progress is not None
        tools = progress.tools
        allowlist: frozenset[str] | None = None
        context = _tool_context(data)
        for call in progress.pending:
            if call.id in progress.decisions:
                continue
            tool = tools.get(call.name)
            if tool is None:
                progress.decisions[call.id] = (False, f"there is no tool called {call.name!r}")
                continue
            refused = refusal_reason(tool, call.arguments, context)
            if refused is not None:  # no answer could allow it: the user is not asked
                progress.decisions[call.id] = (False, refused)
                continue
            if allowlist is None:
                allowlist = await sv.call(data.session, Allowlist())
            decision, reason = decide(tool, data.autonomy, allowlist, call.arguments)
            if decision is Decision.ASK:
                return await self._ask(data, call, reason)
            progress.decisions[call.id] = (decision is Decision.APPROVE, reason)
        return sv.NextState(LoopState.EXECUTING_TOOLS, data, sv.NextEvent(_Step.EXECUTE))

    async def _ask(self, data: _Data, call: ToolCall, reason: str) -> Any:
        """Ask the user about *call*; *reason* is why this very call asks (a prompt file,
        the simple commands of a bash line), and /always is offered when it can cover it."""
        progress = data.progress
        assert progress is not None
        progress.asking = call
        tool = progress.tools[call.name]
        keys = allow_keys(tool, call.arguments)
        await sv.call(data.session, AwaitingApproval(keys))
        emit("approval_requested", session_id=data.info.id, tool=call.name, arguments=_args_preview(call))
        question = f"Approve {call.name} with {_args_preview(call)}?" + (f" ({reason}.)" if reason else "")
        # The whole question is scrubbed: the reason may quote the model's arguments (a path).
        await tell(
            progress.turn.channel.approval_asked,
            scrub(
                f"{question} Reply /yes, /no or /always "
                f"(allow {describe_keys(keys)} for the rest of this conversation)."
                if keys
                else f"{question} Reply /yes or /no."
            ),
        )
        timeout = data.runtime.config.agentic_loop.approval_timeout_seconds
        return sv.KeepState(data, sv.StateTimeout(timeout, "approval"))

    def _resolve(self, data: _Data, approved: bool, how: str) -> Any:
        progress = data.progress
        assert progress is not None and progress.asking is not None
        call, progress.asking = progress.asking, None
        progress.decisions[call.id] = (approved, "" if approved else f"denied: {how}")
        emit("approval_resolved", session_id=data.info.id, tool=call.name, approved=approved, how=how)
        return sv.KeepState(data, [sv.StateTimeout(None), sv.NextEvent(_Step.APPROVE)])

    # --- executing_tools -> streaming -----------------------------------------------------

    async def _execute(self, data: _Data) -> Any:
        progress = data.progress
        assert progress is not None
        info = data.info
        tools = progress.tools
        session = ToolSession(info.id, info.agent_id, info.user_id, info.channel)
        # The sandbox app's jails: bash and terminal run in the one they are set to use.
        context = attrs.evolve(_tool_context(data), jails=await session_jails(session))
        context = attrs.evolve(context, call_tool=_script_dispatcher(data, tools, session, context))
        results = []
        for call in progress.pending:
            approved, reason = progress.decisions.get(call.id, (False, "not approved"))
            tool = tools.get(call.name)
            if approved and tool is not None:
                emit("tool_call_start", session_id=info.id, tool=call.name, arguments=_args_preview(call))
                await tell(progress.turn.channel.tool_started, call.name, _args_preview(call))
                started = time.perf_counter()
                result = await run_tool(tool, call.arguments, session, context)
                await tell(progress.turn.channel.tool_finished, call.name, scrub(result.text), result.is_error)
                emit("tool_call_result", session_id=info.id, tool=call.name, is_error=result.is_error,
                     duration_ms=round((time.perf_counter() - started) * 1000, 1), chars=len(result.text))  # fmt: skip
            else:
                result = ToolResult(f"the tool call was not run: {reason}", is_error=True)
            progress.tool_calls += 1
            results.append(Message("tool", scrub(result.text), tool_call_id=call.id, name=call.name))
        await keep_fresh(info.agent_id)  # what the tools wrote is searchable by the next call
        try:
            await sv.call(data.session, Append(results))
        except PersistError as exc:
            return self._fail(data, f"The tool results could not be saved: {exc}", _STORAGE)
        progress.pending = []
        return sv.NextState(LoopState.STREAMING, data, sv.NextEvent(_Step.CALL_MODEL))

    # --- finalizing -> idle ---------------------------------------------------------------

    async def _stopped(self, data: _Data) -> Any:
        """The user stopped the turn: calls it left unanswered are answered, and it ends "Stopped."."""
        await sv.call(data.session, CloseOpenCalls())
        return self._fail(data, STOPPED, TurnResult(STOPPED, ok=False, error=TurnError.STOPPED))

    def _fail(self, data: _Data, message: str, failure: TurnResult) -> Any:
        """End the turn with *message*, failed as *failure* says (its kind, status, retry)."""
        assert data.progress is not None
        data.progress.reply = scrub(message)
        data.progress.failure = failure
        return sv.NextState(LoopState.FINALIZING, data, sv.NextEvent(_Step.FINALIZE))

    async def _finalize(self, data: _Data) -> Any:
        progress = data.progress
        assert progress is not None
        channel = progress.turn.channel
        failure = progress.failure
        await tell(channel.finalize_draft if failure is None else channel.turn_failed, progress.reply)
        result = TurnResult(
            progress.reply, failure is None, progress.prompt_tokens, progress.completion_tokens, progress.tool_calls,
            failure.error if failure else None, failure.model_status if failure else None,
            failure.retry_after if failure else None,
        )  # fmt: skip
        try:
            await sv.call(data.session, FinishTurn(progress.turn, result))
        except sv.NoProc:
            # The session stopped under the turn (it moved to another node, or sleeps):
            # it answered the turn as interrupted, and this loop goes with it.
            return sv.Stop(sv.NORMAL, data)
        if failure is None:
            remember_exchange(data.info, progress.started, scrub(progress.turn.text), progress.reply)
        emit(
            "turn_complete", session_id=data.info.id, agent_id=data.info.agent_id,
            outcome=failure.error.value if failure and failure.error else "ok", rounds=progress.rounds,
            tool_calls=progress.tool_calls, prompt_tokens=progress.prompt_tokens,
            completion_tokens=progress.completion_tokens,
            total_duration_ms=round((time.perf_counter() - progress.began) * 1000, 1),
        )  # fmt: skip
        data.progress = None
        return sv.NextState(LoopState.IDLE, data, sv.NextEvent(_Step.NEXT))
