"""Through the real daemon and CLI: a schedule no clock can hold is refused saying why, and
one user cannot take an agent's whole job quota (`[scheduler] max_jobs_per_user`)."""

from __future__ import annotations

from pathlib import Path

from tests.support.model_server import Reply, scripted_model

from .daemon import cli, running_daemon, write_config

QUOTA = "[scheduler]\nmax_jobs_per_user = 2\nmax_jobs_per_agent = 3\n[scheduler.heartbeat]\nenabled = false\n"


async def test_bounds_and_the_per_user_quota_through_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with (
        scripted_model(repeat=Reply("ok")) as model,
        running_daemon(write_config(tmp_path, model, extra=QUOTA), home),
    ):
        for args, why in [
            (["--every", "100000000000000000000s"], "is too long: the longest interval is 100 years"),
            (["--every", "1000000000000000000000000000000d"], "is too long"),
            (["--every", "9" * 400], "is too long"),
            (["--at", "9999-12-31T23:59"], "is too far ahead: a job must be due within 100 years"),
            (["--cron", "0 0 30 2 *"], "never matches"),
        ]:
            refused = await cli(home, "scheduler", "add", *args, "--message", "x")
            assert refused.returncode == 1 and why in refused.stderr.decode(), (args, refused.stderr)

        async def add(user: str) -> tuple[int, str]:
            done = await cli(home, "scheduler", "add", "--user", user, "--every", "1h", "--message", "check")
            return done.returncode, done.stderr.decode()

        assert [await add("telegram:mallory") for _ in range(2)] == [(0, "")] * 2
        code, why = await add("telegram:mallory")
        assert (
            code == 1
            and "user 'telegram:mallory' has 2 jobs, the most allowed (scheduler.max_jobs_per_user = 2)" in why
        )
        assert await add("local:ada") == (0, "")  # the agent's quota still has room for others
        code, why = await add("local:bob")
        assert code == 1 and "agent 'default' has 3 jobs" in why and "max_jobs_per_agent = 3" in why
        listed = (await cli(home, "scheduler", "list")).stdout.decode()
        assert listed.count("telegram:mallory") == 2 and listed.count("local:ada") == 1
