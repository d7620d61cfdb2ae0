"""The tool behaviour, the tool registry and the built-in tools.

Its workers land with its issue; until then the daemon runs it as an empty supervisor.
"""

__all__: list[str] = []
