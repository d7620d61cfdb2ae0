"""The HTTP and WebSocket API, the rate limiter, and the chat channels (Telegram, TUI).

Its workers land with its issue; until then the daemon runs it as an empty supervisor.
"""

__all__: list[str] = []
