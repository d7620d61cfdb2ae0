"""Sessions, the agentic loop, providers, approval, compaction, the scrubber, workspaces and skills.

Its workers land with its issue; until then the daemon runs it as an empty supervisor.
"""

__all__: list[str] = []
