"""A small Telegram Bot API client over httpx: the methods the channel uses, 429s honoured."""

from __future__ import annotations

from typing import Any, Final

import httpx
import trio
from loguru import logger

_MAX_429_RETRIES: Final = 3


class TelegramError(Exception):
    """The Bot API answered ``ok: false``; ``code`` is its error code (409, 400, ...)."""

    def __init__(self, method: str, code: int, description: str, retry_after: float | None = None) -> None:
        super().__init__(f"Telegram {method}: {code} {description}")
        self.code = code
        self.description = description
        self.retry_after = retry_after


class BotApi:
    def __init__(self, client: httpx.AsyncClient, api_base: str, token: str) -> None:
        self._client = client
        self._base = f"{api_base.rstrip('/')}/bot{token}"
        self._files = f"{api_base.rstrip('/')}/file/bot{token}"

    async def call(self, method: str, http_timeout: float = 30.0, **params: Any) -> Any:
        """Call *method*; waits out a 429's ``retry_after`` (a few times) before giving up."""
        params = {k: v for k, v in params.items() if v is not None}
        for attempt in range(_MAX_429_RETRIES + 1):
            try:
                response = await self._client.post(f"{self._base}/{method}", json=params, timeout=http_timeout)
                body = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise TelegramError(method, 0, f"no usable answer ({type(exc).__name__})") from None
            if body.get("ok"):
                return body.get("result")
            code = int(body.get("error_code") or response.status_code)
            retry_after = (body.get("parameters") or {}).get("retry_after")
            if code == 429 and retry_after is not None and attempt < _MAX_429_RETRIES:
                logger.warning("Telegram {}: rate limited; retrying in {} s", method, retry_after)
                await trio.sleep(float(retry_after))
                continue
            raise TelegramError(method, code, str(body.get("description", "")), retry_after)
        raise AssertionError("unreachable")  # pragma: no cover

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
