"""JSON-RPC 2.0's reserved error codes, shared by every JSON-RPC speaker in BeamClaw.

The A2A endpoint and the sandbox's tool bridge both answer JSON-RPC; each keeps its own
application codes (``-32000`` to ``-32099``) beside these.
"""

from __future__ import annotations

from typing import Final

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
