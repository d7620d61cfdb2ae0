"""A2A (Agent2Agent) v1.0 over JSON-RPC 2.0: the agent card and the task manager.

Other agents send this daemon messages as A2A tasks; each task runs one turn of the
configured agent in the conversation of its context id, and its state is kept in
the store (SQLite, or PostgreSQL). The gateway serves `A2AService.card` and `A2AService.handle` over HTTP.
"""

from ._config import A2AConfig
from ._jsonrpc import A2AService, a2a_service
from ._tasks import SCHEMA, Client
from ._tree import supervision_tree

__all__ = [
    "A2AConfig",
    "A2AService",
    "SCHEMA",
    "Client",
    "a2a_service",
    "supervision_tree",
]
