"""The MCP client (stdio, streamable HTTP), tool discovery and the server registry.

Its workers land with its issue; until then the daemon runs it as an empty supervisor.
"""

__all__: list[str] = []
