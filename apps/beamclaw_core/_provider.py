"""Model providers: the `Provider` protocol the loop calls, and the OpenAI-compatible one.

The loop, compaction and the memory flush know a provider only through `Provider`
(``complete``, ``stream``, ``capabilities``), so another API is added by writing a class
that has these and choosing it in `Runtime`, without touching the loop.

`OpenAICompatProvider` serves OpenRouter, OpenAI, Ollama, llama.cpp... by base_url. It
retries 429 and 5xx answers (and connection failures) with backoff, honouring Retry-After
(`beamclaw_base.retry`, the one retry helper), and turns every other failure (a missing
key, a refusal, a malformed reply, a stream cut short) into a `ProviderError` whose
message a user can act on. A streamed reply is read with httpx-sse, over a body cut off
past a bound (httpx-sse holds a line whole until its newline comes). Only metadata is
logged (status, duration, model, tokens), never a body.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final, Protocol, cast, final, runtime_checkable

import attrs
import httpx
import httpx_sse
import trio
from loguru import logger

from beamclaw_base import MissingSecret, RetryPolicy, parse_retry_after, retry
from beamclaw_obs import scrub, valid_unicode

from ._config import ProviderConfig
from ._history import answered_history
from ._messages import Message, ToolCall

_RETRYABLE: Final = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: The longest wait between two tries, whatever a server's Retry-After says.
_MAX_WAIT: Final = 60.0

OnText = Callable[[str], Awaitable[None]]
#: Told of each retry: (the attempt that failed, how many may be made, the delay before
#: the next, what went wrong).
OnRetry = Callable[[int, int, float, str], Awaitable[None]]


class ProviderError(Exception):
    """A model call failed; ``str()`` is a message fit for the user."""

    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class ProviderNotConfigured(ProviderError):
    """The provider cannot be called as configured (its API key is not set)."""


@final
@attrs.frozen
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@final
@attrs.frozen
class Completion:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str = ""


@final
@attrs.frozen
class Capabilities:
    """What a provider's model can do, for the callers that must know."""

    #: The model's context window in tokens when the provider knows it; None: guessed
    #: from the model's name (`context_window`).
    context_window: int | None
    #: The longest wait for the server's next bytes: it also bounds a hidden call whose
    #: reply nobody watches (a summary, the memory flush).
    timeout_seconds: float
    #: Whether the model is offered tools natively (else it writes calls as text).
    tools: bool = True
    #: Whether a reply can be streamed as it is written.
    streaming: bool = True


@runtime_checkable
class Provider(Protocol):
    """A model API as the loop uses it; failures are `ProviderError` with a message fit for the user."""

    @property
    def name(self) -> str:
        """The ``[core.providers.NAME]`` it was configured as."""
        ...

    @property
    def model(self) -> str:
        """The model name it asks for."""
        ...

    def capabilities(self) -> Capabilities: ...

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        """One whole reply."""
        ...

    async def stream(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        on_text: OnText,
        on_retry: OnRetry | None = None,
    ) -> Completion:
        """A streamed reply: *on_text* gets each piece of text as it arrives, *on_retry* each retry."""
        ...


def _error_text(body: bytes) -> str:
    try:
        data = json.loads(body)
        message = data.get("error", {}).get("message") if isinstance(data.get("error"), dict) else data.get("error")
    except (ValueError, AttributeError):
        message = None
    return scrub(str(message or body[:200].decode(errors="replace")))


def _valid_unicode(text: Any) -> Any:
    """A string of the model's with each lone surrogate (``"\\ud800"`` in the JSON) as ``?``:
    such a character cannot be stored, logged or matched, and no model means one."""
    return valid_unicode(text) if isinstance(text, str) else text


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    return Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))


#: After a reply outgrew ``max_reply_chars``, the rest of it is read and thrown away,
#: up to this many bytes more, so the connection ends cleanly; past that it is dropped.
_DRAIN_BYTES: Final = 32 * 1024 * 1024


class _TooLong(Exception):
    """The reply went past ``max_reply_chars``."""


class _Capped(httpx.AsyncByteStream):
    """The body of *response* as it comes, ending past *limit* bytes downloaded.

    httpx-sse keeps a line, and an event's data lines, whole until they end, so a
    server sending one endless line would fill the memory: what it is given stops at
    the bound (``overflowed`` says so). The rest is read and thrown away, up to
    `_DRAIN_BYTES` more, so the connection ends cleanly; past that it is dropped.
    """

    def __init__(self, response: httpx.Response, limit: int) -> None:
        self._response = response
        self._limit = limit
        self.overflowed = False

    async def __aiter__(self) -> AsyncGenerator[bytes, None]:
        response = self._response
        async with contextlib.aclosing(cast(AsyncGenerator[bytes, None], response.aiter_bytes())) as pieces:
            async for piece in pieces:
                if response.num_bytes_downloaded > self._limit:
                    self.overflowed = True
                    if response.num_bytes_downloaded > self._limit + _DRAIN_BYTES:
                        break
                    continue
                yield piece


@attrs.define
class _StreamState:
    limit: int
    size: int = 0
    content: list[str] = attrs.field(factory=list)
    calls: dict[int, list[str]] = attrs.field(factory=dict)  # index -> [id, name, arguments]
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    done: bool = False

    def completion(self) -> Completion:
        calls = tuple(
            ToolCall(id=c[0] or f"call_{i}", name=c[1], arguments=c[2]) for i, c in sorted(self.calls.items())
        )
        return Completion("".join(self.content), calls, self.usage, self.finish_reason, self.model)


def _retryable(exc: Exception) -> bool | float:
    """Whether a failed call is tried again: after the server's Retry-After when it gave one."""
    if not isinstance(exc, ProviderError) or not exc.retryable:
        return False
    return True if exc.retry_after is None else exc.retry_after


class OpenAICompatProvider:
    """One configured endpoint, over a caller-owned `httpx.AsyncClient` (a `Provider`)."""

    def __init__(self, name: str, config: ProviderConfig, client: httpx.AsyncClient) -> None:
        self._name = name
        self.config = config
        self._client = client
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._tools_cache: tuple[list[dict[str, Any]], str] | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self.config.model

    def capabilities(self) -> Capabilities:
        return Capabilities(self.config.context_window, self.config.timeout_seconds)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self.config.headers}
        if self.config.api_key is not None:
            try:
                key = self.config.api_key.get(f"the model provider {self.name!r}")
            except MissingSecret as exc:
                raise ProviderNotConfigured(
                    f"{exc}. Set it (`export {self.config.api_key.env}=...`), run `beamclaw reload` in that shell "
                    "so the running daemon takes it, and send your message again."
                ) from None
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _body(self, messages: list[Message], tools: list[dict[str, Any]], stream: bool) -> bytes:
        """The request's JSON, what ``json.dumps`` of it would give, made from each message's
        JSON (`Message.openai_json`, made once) and the tools' (made once per list)."""
        # The last line of the tool-call invariant: whatever a crash left in a history,
        # no request goes out with a call unanswered (a strict API would refuse it).
        answered = answered_history(messages)
        if answered != messages:
            logger.warning("provider {}: closed unanswered tool calls in a history before sending it", self.name)
        rest: dict[str, Any] = {}
        if self.config.max_tokens is not None:
            rest["max_tokens"] = self.config.max_tokens
        if stream:
            rest["stream"] = True
            rest["stream_options"] = {"include_usage": True}
        messages_json = ", ".join(m.openai_json for m in answered)
        parts = [f'{{"model": {json.dumps(self.config.model)}, "messages": [{messages_json}]']
        if tools:
            parts.append(f', "tools": {self._tools_json(tools)}')
        parts.extend(f", {json.dumps(key)}: {json.dumps(value)}" for key, value in rest.items())
        parts.append("}")
        return "".join(parts).encode()

    def _tools_json(self, tools: list[dict[str, Any]]) -> str:
        """*tools* as JSON; the same list (the loop keeps one until the tool set changes)
        is not serialised again."""
        cached = self._tools_cache
        if cached is None or cached[0] is not tools:
            cached = self._tools_cache = (tools, json.dumps(tools))
        return cached[1]

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        """One whole reply."""
        return await self._request(self._body(messages, tools or [], stream=False), None)

    async def stream(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        on_text: OnText,
        on_retry: OnRetry | None = None,
    ) -> Completion:
        """A streamed reply: *on_text* gets each piece of text as it arrives, *on_retry*
        each retry (so a user waiting sees why)."""
        return await self._request(self._body(messages, tools or [], stream=True), on_text, on_retry)

    async def _request(self, content: bytes, on_text: OnText | None, on_retry: OnRetry | None = None) -> Completion:
        headers = self._headers()
        attempts = self.config.max_retries + 1

        async def once() -> Completion:
            started = time.perf_counter()
            try:
                with trio.fail_after(self.config.max_reply_seconds):
                    return await self._attempt(content, headers, on_text, started)
            except trio.TooSlowError:
                raise ProviderError(
                    f"the model's reply took longer than {self.config.max_reply_seconds:g} s "
                    f"(core.providers.{self.name}.max_reply_seconds); it was cut off"
                ) from None

        async def retrying(attempt: int, delay: float, exc: Exception) -> None:
            logger.warning(
                "provider {}: {} (attempt {} of {}); retrying in {:.1f} s", self.name, exc, attempt, attempts, delay
            )
            if on_retry is not None:
                await on_retry(attempt, attempts, delay, str(exc))

        policy = RetryPolicy(attempts, wait_initial=0.5, wait_max=_MAX_WAIT, jitter=0.25)
        return await retry(once, policy, _retryable, retrying)

    async def _attempt(
        self, content: bytes, headers: dict[str, str], on_text: OnText | None, started: float
    ) -> Completion:
        # A whole reply comes after the model has written all of it: no read waits less than
        # that (max_reply_seconds bounds the attempt), where a stream's pieces each come soon.
        timeout = (
            self.config.timeout_seconds
            if on_text is not None
            else httpx.Timeout(self.config.timeout_seconds, read=None)
        )
        request = self._client.build_request("POST", self._url, content=content, headers=headers, timeout=timeout)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.UnsupportedProtocol:
            raise ProviderError(  # a retry cannot help; the configuration checks this too
                f"the model server's address {self.config.base_url} is not an http:// or https:// URL"
            ) from None
        except httpx.TransportError as exc:
            raise ProviderError(
                f"cannot reach the model server at {self.config.base_url}: {type(exc).__name__}", retryable=True
            ) from None
        try:
            if response.status_code >= 400:
                raw = await response.aread()
                raise ProviderError(
                    f"the model server answered HTTP {response.status_code}: {_error_text(raw)}",
                    status=response.status_code,
                    retryable=response.status_code in _RETRYABLE,
                    retry_after=parse_retry_after(response.headers.get("retry-after")),
                )
            if on_text is None:
                completion = self._parse_whole(await self._read_whole(response))
            else:
                completion = await self._parse_stream(response, on_text)
        except httpx.TransportError as exc:
            raise ProviderError(f"the model server's reply broke off: {type(exc).__name__}", retryable=False) from None
        finally:
            await response.aclose()
            elapsed = (time.perf_counter() - started) * 1000
            logger.debug("provider {} HTTP {} in {:.0f} ms", self.name, response.status_code, elapsed)
        return completion

    def _parse_whole(self, raw: bytes) -> Completion:
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            message = choice["message"]
            calls = tuple(
                ToolCall(
                    _valid_unicode(c.get("id")) or f"call_{i}",
                    _valid_unicode(c["function"]["name"]),
                    _valid_unicode(c["function"].get("arguments")) or "",
                )
                for i, c in enumerate(message.get("tool_calls") or [])
            )
            content = _valid_unicode(message.get("content")) or ""
            if len(content) + sum(len(c.arguments) for c in calls) > self.config.max_reply_chars:
                raise self._too_long()
            return Completion(
                content, calls, _usage(data.get("usage")), choice.get("finish_reason"),
                data.get("model", ""),
            )  # fmt: skip
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise ProviderError("the model server sent a reply that is not a valid chat completion") from None

    def _too_long(self) -> ProviderError:
        return ProviderError(
            f"the model's reply is longer than {self.config.max_reply_chars:,} characters "
            f"(core.providers.{self.name}.max_reply_chars); it was cut off"
        )

    async def _read_whole(self, response: httpx.Response) -> bytes:
        """The body, refused past a bound (a JSON reply holds at most a few times its text)."""
        limit = 8 * self.config.max_reply_chars + 65_536
        body = bytearray()
        async with contextlib.aclosing(cast(AsyncGenerator[bytes, None], response.aiter_bytes())) as pieces:
            async for piece in pieces:
                if len(body) <= limit:
                    body += piece
                elif response.num_bytes_downloaded > limit + _DRAIN_BYTES:
                    break
        if len(body) > limit:
            raise self._too_long()
        return bytes(body)

    async def _parse_stream(self, response: httpx.Response, on_text: OnText) -> Completion:
        state = _StreamState(self.config.max_reply_chars)
        malformed = too_long = False
        # Bytes, whatever they carry (a chunk padded with fields nobody reads counts too).
        body = _Capped(response, 16 * state.limit + 65_536)
        capped = httpx.Response(
            response.status_code, headers={"content-type": response.headers.get("content-type", "")}, stream=body
        )
        # The stream is read to its end, even after [DONE], a bad chunk or too much text:
        # leaving httpcore's body generator unfinished makes Trio warn when it is collected.
        try:
            async with contextlib.aclosing(httpx_sse.EventSource(capped).aiter_sse()) as events:
                async for event in events:
                    if too_long or state.done or malformed or not event.data:
                        continue
                    if event.data == "[DONE]":
                        state.done = True
                        continue
                    try:
                        await self._apply_chunk(state, json.loads(event.data), on_text)
                    except _TooLong:
                        too_long = True
                    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
                        malformed = True
        except httpx_sse.SSEError:
            kind = scrub(response.headers.get("content-type", "no Content-Type")[:100])
            raise ProviderError(
                f"the model server answered a streamed request with {kind}, not an event stream"
            ) from None
        if too_long or body.overflowed:
            raise self._too_long()
        if malformed:
            raise ProviderError("the model server sent a malformed stream chunk")
        if not state.done and state.finish_reason is None:
            raise ProviderError("the model's reply was cut off before it finished; please try again")
        return state.completion()

    @staticmethod
    async def _apply_chunk(state: _StreamState, chunk: dict[str, Any], on_text: OnText) -> None:
        state.model = chunk.get("model", state.model)
        if chunk.get("usage"):
            state.usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            for call in delta.get("tool_calls") or []:
                slot = state.calls.setdefault(int(call.get("index", 0)), ["", "", ""])
                slot[0] = _valid_unicode(call.get("id")) or slot[0]
                function = call.get("function") or {}
                slot[1] += _valid_unicode(function.get("name")) or ""
                slot[2] += _valid_unicode(function.get("arguments")) or ""
                state.size += len(function.get("name") or "") + len(function.get("arguments") or "")
            text = _valid_unicode(delta.get("content"))
            if text:
                state.size += len(text)
                if state.size > state.limit:
                    raise _TooLong
                state.content.append(text)
                await on_text(text)
            if state.size > state.limit:
                raise _TooLong
            if choice.get("finish_reason"):
                state.finish_reason = choice["finish_reason"]
