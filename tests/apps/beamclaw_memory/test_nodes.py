"""Two nodes' memories on one PostgreSQL database: each node has its own data dir (its own
chunk store and keyword index, derived caches), and a fact kept through one node is found
through the other without restarting it (the kept documents' NOTIFY and catch-up).

Node A runs in a subprocess (a node is a process of its own: the process registry is
per process), keeps one exchange and stops; node B runs here the whole time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from beamclaw_base import StoreConfig

from .conftest import eventually, find, finds, memory_config, running_memory, workspace

_NODE_A = """
import sys
from pathlib import Path

import trio

import beamclaw_memory as memory
from beamclaw_base import Secret, StoreConfig
from tests.apps.beamclaw_memory.conftest import memory_config, running_memory, workspace


async def main(data_dir: Path, doc: str, text: str) -> None:
    workspace(data_dir)
    store = StoreConfig(backend="postgres", dsn=Secret("BEAMCLAW_DATABASE_URL"))
    async with running_memory(data_dir, memory_config(provider="none", watch=3600), store=store):
        await memory.remember_now("default", "local:alice", doc, text)


trio.run(main, Path(sys.argv[1]), sys.argv[2], sys.argv[3])
"""


def _keep_through_node_a(data_dir: Path, doc: str, text: str) -> None:
    """Start node A's memory on its own data dir, keep *text* as *doc* there, stop it."""
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "apps")])}
    done = subprocess.run(
        [sys.executable, "-c", _NODE_A, str(data_dir), doc, text],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


async def test_a_fact_kept_through_one_node_is_found_through_another(
    postgres_store_config: StoreConfig, tmp_path: Path
) -> None:
    node_a, node_b = tmp_path / "a", tmp_path / "b"
    workspace(node_b)
    async with running_memory(node_b, memory_config(provider="none", watch=3600), store=postgres_store_config):
        assert not (await find("default", "kayak", owner="local:alice")).result.hits  # B's index runs, empty

        _keep_through_node_a(node_a, "conversations/s/1", "user: my kayak is in the boathouse")
        found = await eventually(finds("default", "kayak", "boathouse", owner="local:alice"), "B finds A's fact")
        assert found.paths == ["conversations/s/1"]
        assert not (await find("default", "kayak", owner="local:bob")).result.hits  # still alice's alone

        _keep_through_node_a(node_a, "conversations/s/1", "user: my kayak moved to the garage")  # replaced
        await eventually(finds("default", "kayak", "garage", owner="local:alice"), "B finds the new text")
        assert not (await find("default", "kayak", owner="local:alice")).has("boathouse")
