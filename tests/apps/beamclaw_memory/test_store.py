"""The chunk store and the keyword index it keeps in step: a crash between the store's
write and the keyword index's is repaired when the index opens again."""

from __future__ import annotations

import gc
from pathlib import Path

from beamclaw_memory import Bm25Index, Chunk
from beamclaw_memory._index import _open_keywords
from beamclaw_memory._store import ChunkStore, Document


def test_a_change_the_keyword_index_missed_is_put_back_when_it_opens(tmp_path: Path) -> None:
    store = ChunkStore(tmp_path / "chunks.db")
    keywords = _open_keywords(tmp_path, store)
    (old,) = store.put(Document("MEMORY.md", "", "file", "v1"), [Chunk(1, 1, "The boat is at Quay 7.")])
    keywords.replace("MEMORY.md", [(old, "", "The boat is at Quay 7.")])
    store.keywords_caught_up()
    # The file changes; the store is written, then the process dies before the keyword index is.
    (new,) = store.put(Document("MEMORY.md", "", "file", "v2"), [Chunk(1, 1, "The boat is at Quay 9.")])
    assert store.keywords_behind() and len(keywords) == 1  # the same count: counting would not tell
    keywords.close()
    del keywords
    gc.collect()
    reopened = _open_keywords(tmp_path, store)
    assert [cid for cid, _ in reopened.search("quay 9", [""], 5)] == [new]
    assert not store.keywords_behind()
    reopened.close()


def test_an_index_in_step_is_opened_as_it_is(tmp_path: Path) -> None:
    store = ChunkStore(tmp_path / "chunks.db")
    keywords = _open_keywords(tmp_path, store)
    (cid,) = store.put(Document("MEMORY.md", "", "file", "v1"), [Chunk(1, 1, "Biscuit is the dog.")])
    keywords.replace("MEMORY.md", [(cid, "", "Biscuit is the dog.")])
    store.keywords_caught_up()
    keywords.close()
    del keywords
    gc.collect()
    marker = tmp_path / "bm25" / "meta.json"
    before = marker.stat().st_mtime_ns
    reopened = _open_keywords(tmp_path, store)
    assert marker.stat().st_mtime_ns == before  # not rebuilt
    assert isinstance(reopened, Bm25Index) and len(reopened) == 1
    reopened.close()
