"""POST /webhook/telegram: updates pushed by Telegram, checked by their secret-token header,
and stored before the 200 that tells Telegram not to send them again."""

from __future__ import annotations

import hmac
import json

from loguru import logger
from quart import Blueprint, Response, request

import supervision as sv
from beamclaw_base import StoreError

from ._http_api import context, error, json_body
from ._telegram_bot import webhook_update

telegram_webhook = Blueprint("telegram_webhook", __name__)


@telegram_webhook.post("/webhook/telegram")
async def update() -> Response:
    telegram = context().config.channels.telegram
    if not telegram.enabled or telegram.mode != "webhook" or telegram.webhook_secret is None:
        return error("the Telegram webhook is not enabled", 404, "not_found")
    expected = telegram.webhook_secret.get_optional() or ""
    given = request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        return error("wrong or missing X-Telegram-Bot-Api-Secret-Token", 401, "unauthorized")
    body = await json_body("a Telegram update")
    if not isinstance(body.get("update_id"), int):
        return error("a Telegram update has an integer update_id", 400)
    token = telegram.token.get_optional()
    if token is None:
        return error("the Telegram channel has no token", 503, "unavailable")
    try:
        await webhook_update(token, body)
    except (StoreError, sv.NoProc, sv.CallTimeout) as exc:  # not stored: Telegram is told to send it again
        logger.warning("Telegram webhook update {} could not be stored: {}", body["update_id"], exc)
        return error("the update could not be stored; send it again", 503, "unavailable")
    return Response(json.dumps({"ok": True}), content_type="application/json")
