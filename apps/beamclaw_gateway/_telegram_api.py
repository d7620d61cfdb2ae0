"""A small Telegram Bot API client over httpx: the methods the channel uses, 429s honoured."""

from __future__ import annotations

import json
from typing import Any, Final

import httpx
from loguru import logger

from beamclaw_base import RetryPolicy, parse_retry_after, retry

#: A rate-limited call (429) waits the retry_after Telegram gives, at most a minute, up
#: to three times.
_RATE_LIMITED: Final = RetryPolicy(attempts=4, wait_initial=1.0, wait_max=60.0)


class TelegramError(Exception):
    """The Bot API answered ``ok: false``; ``code`` is its error code (409, 400, ...)."""

    def __init__(self, method: str, code: int, description: str, retry_after: float | None = None) -> None:
        super().__init__(f"Telegram {method}: {code} {description}")
        self.code = code
        self.description = description
        self.retry_after = retry_after


def _after_429(exc: Exception) -> bool | float:
    """A 429 is tried again after the wait Telegram asked for; nothing else is."""
    if isinstance(exc, TelegramError) and exc.code == 429 and exc.retry_after is not None:
        return exc.retry_after
    return False


class _Body(httpx.AsyncByteStream):
    """A JSON request body that is an iterator object, not an async generator.

    httpx's own body is an async generator; a request cancelled while it is being
    written (a killed poller, a stopped turn) leaves it unfinished to the garbage
    collector, which Trio reports with a ResourceWarning, possibly much later. This one
    has nothing to finalize.
    """

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data

    def __aiter__(self) -> _Body:
        return self

    async def __anext__(self) -> bytes:
        data, self._data = self._data, None
        if data is None:
            raise StopAsyncIteration
        return data


class BotApi:
    def __init__(self, client: httpx.AsyncClient, api_base: str, token: str) -> None:
        self._client = client
        self._base = f"{api_base.rstrip('/')}/bot{token}"
        self._files = f"{api_base.rstrip('/')}/file/bot{token}"

    async def call(self, method: str, http_timeout: float = 30.0, **params: Any) -> Any:
        """Call *method*; waits out a 429's ``retry_after`` (a few times) before giving up."""
        params = {k: v for k, v in params.items() if v is not None}

        async def rate_limited(attempt: int, delay: float, exc: Exception) -> None:
            logger.warning("Telegram {}: rate limited; retrying in {:g} s", method, delay)

        return await retry(lambda: self._call(method, http_timeout, params), _RATE_LIMITED, _after_429, rate_limited)

    async def _call(self, method: str, http_timeout: float, params: dict[str, Any]) -> Any:
        if self._client.is_closed:  # its owner stopped (the daemon is stopping): a clear error, not httpx's
            raise TelegramError(method, 0, "the HTTP client is closed")
        data = json.dumps(params).encode()
        request = self._client.build_request(
            "POST", f"{self._base}/{method}", content=data, headers={"Content-Type": "application/json"},
            timeout=http_timeout,
        )  # fmt: skip
        request.stream = _Body(data)
        try:
            response = await self._client.send(request)
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise TelegramError(method, 0, f"no usable answer ({type(exc).__name__})") from None
        if not isinstance(body, dict):
            raise TelegramError(method, response.status_code, "the answer is not a JSON object")
        if body.get("ok"):
            return body.get("result")
        code = int(body.get("error_code") or response.status_code)
        parameters = body.get("parameters")
        retry_after = parse_retry_after(parameters.get("retry_after")) if isinstance(parameters, dict) else None
        raise TelegramError(method, code, str(body.get("description", "")), retry_after)

    async def download(self, file_path: str, limit: int) -> bytes:
        """A file's bytes (at most *limit*), by the path getFile gave."""
        async with self._client.stream("GET", f"{self._files}/{file_path}", timeout=60) as response:
            if response.status_code != 200:
                raise TelegramError("download", response.status_code, "file download failed")
            data = b""
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > limit:
                    raise TelegramError("download", 413, f"file larger than {limit} bytes")
        return data
