"""Docker code execution: tool bridge, PII tokenizer, policy and environment filter.

Its workers land with its issue; until then the daemon runs it as an empty supervisor.
"""

__all__: list[str] = []
