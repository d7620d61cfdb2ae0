"""Every node's supervision tree: each node serves its own (``GET /v1/supervision/tree``),
and whoever wants all of them reads the nodes from the registry and asks each one.

Used by the tree route with ``?cluster=1`` (asking the other nodes with requests signed
for the caller) and by `beamclaw tree --cluster` (asking every node with the configured
gateway token). A node the registry holds for dead is not asked; one that does not
answer, or answers with an error, is shown as such: one node down never hides the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import httpx
import trio

import beamclaw_cluster as cluster

#: The route every node serves its own tree at.
TREE_PATH: Final = "/v1/supervision/tree"
#: How long a node may take to answer with its tree.
_ASK_SECONDS: Final = 5.0


def _entry(node: cluster.NodeRow, state: str, tree: dict[str, Any] | None = None, error: str = "") -> dict[str, Any]:
    return {
        "node_id": node.node_id, "instance_id": node.instance_id, "url": node.advertise_url, "state": state,
        "heartbeat_age": round(node.heartbeat_age, 1), "tree": tree, "error": error,
    }  # fmt: skip


async def _ask(client: httpx.AsyncClient, node: cluster.NodeRow, headers: dict[str, str]) -> dict[str, Any]:
    url = node.advertise_url.rstrip("/") + TREE_PATH
    try:
        answer = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return _entry(node, "unreachable", error=f"{url} does not answer ({type(exc).__name__})")
    if answer.status_code != 200:
        return _entry(node, "unreachable", error=f"{url} answered HTTP {answer.status_code}")
    try:
        tree = answer.json()
    except ValueError:
        return _entry(node, "unreachable", error=f"{url} did not answer with a tree")
    return _entry(node, "alive", tree)


async def node_trees(
    nodes: list[cluster.NodeRow],
    headers: Callable[[], dict[str, str]],
    local: tuple[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One entry per node of *nodes* (as the registry lists them): its name, instance, URL,
    ``state`` (``alive``, ``dead`` or ``unreachable``, with ``error`` saying why) and
    ``tree``. Live nodes are asked at the same time, each with *headers*\\(); *local* is
    (this node's instance id, its tree), answered without asking."""
    entries: list[dict[str, Any]] = [{} for _ in nodes]

    async def fill(i: int, node: cluster.NodeRow, client: httpx.AsyncClient) -> None:
        if local is not None and node.instance_id == local[0]:
            entries[i] = _entry(node, "alive", local[1])
        elif not node.alive:
            entries[i] = _entry(node, "dead", error=f"no heartbeat for {node.heartbeat_age:.1f} s")
        else:
            entries[i] = await _ask(client, node, headers())

    async with httpx.AsyncClient(timeout=_ASK_SECONDS, trust_env=False) as client, trio.open_nursery() as nursery:
        for i, node in enumerate(nodes):
            nursery.start_soon(fill, i, node, client)
    return entries
