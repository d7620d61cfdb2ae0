"""Jobs (at, every, cron), the heartbeat, and the runner/executor split.

Its workers land with its issue; until then the daemon runs it as an empty supervisor.
"""

__all__: list[str] = []
