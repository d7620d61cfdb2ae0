"""What a fire does: a job's message as a turn of its agent, in the session of the user
who made it, the reply delivered to that user; or a heartbeat (see `_heartbeat`): the
agent's HEARTBEAT.md, then each user's own in that user's conversation.

The reply is delivered whole at the end (a channel app's `core.outbound` reaches
Telegram or a connected terminal); an approval question the turn asks on the way is
passed on at once, so the user can answer it (``/yes``) in the same conversation. A
user no channel reaches now finds the reply in the history.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Final

import attrs
import trio
from loguru import logger

import beamclaw_core as core
from beamclaw_tools import Autonomy

from ._config import SchedulerConfig
from ._heartbeat import (
    conversations_of,
    digest,
    heartbeat_prompt,
    heartbeat_target,
    is_heartbeat_ok,
    within_active_hours,
)  # fmt: skip
from ._job import HEARTBEAT, Fire, Job
from ._jobs import Clock
from ._requests import Delivered, DeliveredRecently, Outcome
from ._store import store_call

#: A heartbeat output the same as one delivered within this many seconds is not sent again.
_DEDUP_SECONDS: Final = 24 * 3600.0


@attrs.define
class _Delivery(core.ReplyOnlyChannel):
    """A channel for a turn nobody is waiting on: questions go to the user now, the reply at the end."""

    reach: core.Channel | None

    async def send(self, text: str) -> None:
        if self.reach is not None:
            await self.reach.send(text)

    async def turn_failed(self, text: str) -> None:
        """Nothing now: a failed run is retried, and told in the run log."""

    async def deliver(self, text: str) -> str:
        if self.reach is None:
            return "kept in the history (no channel reaches the user now)"
        with trio.move_on_after(60):
            await self.reach.send(text)
            return "delivered"
        return "kept in the history (its channel did not answer in 60 s)"


@attrs.frozen
class JobTurns:
    """The `Perform` of the executor in the daemon."""

    config: SchedulerConfig
    data_dir: Path
    clock: Clock

    async def __call__(self, fire: Fire) -> tuple[Outcome, str]:
        try:
            if fire.job.purpose == HEARTBEAT:
                return await self._heartbeat(fire.job)
            return await self._job(fire.job)
        except (core.UnknownAgent, core.InvalidUserId, core.InvalidAgentName) as exc:
            return "failed", str(exc)

    async def _turn(self, job: Job, user_id: str, channel_name: str, text: str) -> tuple[core.TurnResult, _Delivery]:
        handle = await core.open_session(user_id, job.agent_id, channel_name)
        delivery = _Delivery(core.outbound_channel(user_id))
        autonomy = Autonomy.parse(self.config.default_autonomy)
        run = await core.submit(handle, text, delivery, autonomy=autonomy)
        return await run.wait(), delivery

    async def _job(self, job: Job) -> tuple[Outcome, str]:
        text = f"[Scheduled job {job.id}, {job.schedule.describe()}] {job.message}"
        result, delivery = await self._turn(job, job.user_id, job.channel, text)
        if not result.ok:
            return "failed", result.text
        return "ok", await delivery.deliver(result.text)

    async def _heartbeat(self, job: Job) -> tuple[Outcome, str]:
        """The agent's HEARTBEAT.md where ``heartbeat.target`` says, then each user's own in
        that user's conversation (see `_heartbeat`); one outcome for them all."""
        if not within_active_hours(self.clock(), self.config.heartbeat):
            return "skipped", "outside the active hours"
        outcomes = [await self._beat(job, core.Workspace.of(self.data_dir, job.agent_id), None)]
        for user_id, channel in await conversations_of(job.agent_id):
            own = core.user_workspace(self.data_dir, job.agent_id, user_id, single_user=False)
            if await trio.to_thread.run_sync(own.root.is_dir):
                outcomes.append(await self._beat(job, own, (user_id, channel)))
        for status in ("failed", "ok", "suppressed"):
            if said := [detail for got, detail in outcomes if got == status]:
                return status, "; ".join(said)
        return outcomes[0]

    async def _beat(self, job: Job, files: core.Workspace, owner: tuple[str, str] | None) -> tuple[Outcome, str]:
        """One HEARTBEAT.md's turn: the agent's (*owner* None) or one user's, in their conversation."""
        beat = self.config.heartbeat
        try:
            content = await trio.to_thread.run_sync(files.read, "HEARTBEAT.md")
        except OSError as exc:
            return "failed", f"HEARTBEAT.md could not be read: {exc}"
        prompt = heartbeat_prompt(content)
        if prompt is None:
            return "skipped", "HEARTBEAT.md has nothing to do"
        user_id, channel = owner or await heartbeat_target(job.agent_id, beat.target)
        result, delivery = await self._turn(job, user_id, channel, prompt)
        if not result.ok:
            return "failed", result.text
        if beat.suppress_ok and is_heartbeat_ok(result.text):
            return "suppressed", "HEARTBEAT_OK"
        seen = digest(f"{user_id}\n{result.text}")
        if await store_call(DeliveredRecently(job.id, seen, self.clock() - _DEDUP_SECONDS)):
            return "suppressed", "the same output was delivered within 24 h"
        if user_id.startswith("heartbeat:"):
            return (
                "ok",
                "kept in the heartbeat conversation (heartbeat.target is none, or no one has talked to the agent)",
            )
        told = await delivery.deliver(result.text)
        with contextlib.suppress(Exception):
            await store_call(Delivered(job.id, seen))
        logger.info("heartbeat of {}: {}", job.agent_id, told)
        return "ok", told
