"""Jobs (at, every, cron), the heartbeat, and the runner/executor split.

An agent acts on its own, on time, exactly once per due time: the store records each
fire before it runs, the runner only keeps time, and the executor runs each fire in a
temporary worker (see `_tree` for the supervision tree and `_jobs` for the guarantees).
"""

from beamclaw_base import StoreError

from ._api import SchedulerNotRunning, add_job, change_job, find_job, job_runs, list_jobs
from ._config import HeartbeatConfig, SchedulerConfig, parse_scheduler_config
from ._job import Fire, Job, RunRecord
from ._jobs import JobError
from ._schedule import (
    BadSchedule,
    Schedule,
    describe_time,
    make_schedule,
    parse_time,
)
from ._tables import SCHEMA
from ._tool import SchedulerTool, describe_job
from ._tree import scheduler_tree, supervision_tree

__all__ = [
    "SCHEMA",
    "BadSchedule",
    "Fire",
    "HeartbeatConfig",
    "Job",
    "JobError",
    "RunRecord",
    "Schedule",
    "SchedulerConfig",
    "SchedulerNotRunning",
    "SchedulerTool",
    "StoreError",
    "add_job",
    "change_job",
    "describe_job",
    "describe_time",
    "find_job",
    "job_runs",
    "list_jobs",
    "make_schedule",
    "parse_scheduler_config",
    "parse_time",
    "scheduler_tree",
    "supervision_tree",
]
