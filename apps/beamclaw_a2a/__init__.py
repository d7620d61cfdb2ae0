"""The A2A agent card and the JSON-RPC task manager.

Its workers land with its issue; until then the daemon runs it as an empty supervisor.
"""

__all__: list[str] = []
