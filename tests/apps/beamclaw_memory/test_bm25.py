"""The keyword index: real tantivy in a temporary folder."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from beamclaw_memory import Bm25Index, IndexCorrupted


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Bm25Index]:
    opened = Bm25Index(tmp_path / "bm25")
    yield opened
    opened.close()


def _ids(hits: list[tuple[int, float]]) -> list[int]:
    return [chunk_id for chunk_id, _ in hits]


def test_the_chunk_with_more_matching_terms_ranks_first(index: Bm25Index) -> None:
    index.replace(
        "MEMORY.md",
        [
            (1, "", "The garden has tomatoes."),
            (2, "", "The garden has tomatoes and basil, planted in the greenhouse."),
            (3, "", "Nothing about plants here at all."),
        ],
    )
    hits = index.search("garden basil greenhouse", [""], 10)
    assert _ids(hits) == [2, 1]
    assert hits[0][1] > hits[1][1] > 0


def test_a_rare_term_outweighs_a_common_one(index: Bm25Index) -> None:
    common = [(i, "", f"meeting notes number {i} about the meeting") for i in range(10, 30)]
    index.replace("notes.md", [*common, (1, "", "meeting with the zeppelin engineer")])
    index.replace("other.md", [(2, "", "the zeppelin museum")])
    hits = index.search("meeting zeppelin", [""], 5)
    # Both words, or the rare one alone, beat every chunk that has only the common word.
    assert sorted(_ids(hits)[:2]) == [1, 2]


def test_stemming_matches_other_forms_of_a_word(index: Bm25Index) -> None:
    index.replace("a.md", [(1, "", "She runs every morning."), (2, "", "Cooking pasta tonight.")])
    assert _ids(index.search("running", [""], 5)) == [1]
    assert _ids(index.search("cooked", [""], 5)) == [2]
    assert _ids(index.search("MORNINGS", [""], 5)) == [1]


@pytest.mark.parametrize(
    "query",
    [
        "AND", "OR", "NOT", "cat AND", "OR cat", "cat OR OR dog", '"cat', 'cat "dog', "cat:dog", "text:cat",
        "(cat", "cat) OR (", "((()))", "*", "cat*", "cat^2", "cat~1", "IN [a TO b]", "[", "{", "-cat", "+",
        "\\", "'", "owner:alice", "doc:MEMORY.md", "id:1", "", "   ", "🙂 🐱", "x" * 5000, " ".join(["cat"] * 500),
    ],
)  # fmt: skip
def test_query_syntax_in_user_text_never_raises(index: Bm25Index, query: str) -> None:
    index.replace("a.md", [(1, "", "the cat and the dog"), (2, "alice", "alice's cat")])
    hits = index.search(query, [""], 10)
    assert 2 not in _ids(hits)  # and never widens who is searched
    if "cat" in query.lower() and "owner" not in query:
        assert 1 in _ids(hits)


def test_searches_only_the_owners_asked_for(index: Bm25Index) -> None:
    index.replace("MEMORY.md", [(1, "", "the launch code is kept in the safe")])
    index.replace("conversations/a/1", [(2, "alice", "alice said the launch code is blue")])
    index.replace("conversations/b/1", [(3, "bob", "bob said the launch code is red")])
    assert _ids(index.search("launch code", [""], 10)) == [1]
    assert sorted(_ids(index.search("launch code", ["", "alice"], 10))) == [1, 2]
    assert sorted(_ids(index.search("launch code", ["", "bob"], 10))) == [1, 3]
    assert _ids(index.search("launch code", [], 10)) == []
    assert _ids(index.search("alice", ["", "bob"], 10)) == []


def test_replace_drops_the_old_chunks_of_that_document_only(index: Bm25Index) -> None:
    index.replace("a.md", [(1, "", "apples"), (2, "", "pears")])
    index.replace("b.md", [(3, "", "apples too")])
    index.replace("a.md", [(4, "", "plums")])
    assert len(index) == 2
    assert _ids(index.search("apples", [""], 10)) == [3]
    assert _ids(index.search("pears", [""], 10)) == []
    assert _ids(index.search("plums", [""], 10)) == [4]
    index.remove("b.md")
    assert _ids(index.search("apples", [""], 10)) == []
    assert len(index) == 1
    index.remove("never.md")  # nothing to remove is not an error
    assert len(index) == 1


def test_a_document_name_that_prefixes_another_is_removed_alone(index: Bm25Index) -> None:
    index.replace("memory/2026-01-01.md", [(1, "", "first")])
    index.replace("memory/2026-01-01.md.bak", [(2, "", "second")])
    index.remove("memory/2026-01-01.md")
    assert _ids(index.search("first second", [""], 10)) == [2]


def test_the_index_is_kept_on_disk(tmp_path: Path) -> None:
    first = Bm25Index(tmp_path / "bm25")
    first.replace("a.md", [(7, "", "persistent walrus")])
    first.close()
    del first
    gc.collect()  # the writer's lock goes with the object
    again = Bm25Index(tmp_path / "bm25")
    assert _ids(again.search("walrus", [""], 10)) == [7]
    again.close()


@pytest.mark.parametrize("damage", ["meta", "segments", "missing_segment"])
def test_a_damaged_index_is_reported_and_can_be_rebuilt(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "bm25"
    first = Bm25Index(folder)
    first.replace("a.md", [(1, "", "some words"), (2, "", "more words")])
    first.close()
    del first
    gc.collect()
    files = [p for p in folder.iterdir() if not p.name.startswith(".")]
    segments = [p for p in files if p.name != "meta.json"]
    if damage == "meta":
        (folder / "meta.json").write_bytes(b"\x00not json")
    elif damage == "segments":
        for path in segments:
            path.write_bytes(b"garbage" * 10)
    else:
        next(p for p in segments if p.suffix == ".term").unlink()
    with pytest.raises(IndexCorrupted, match="cannot be opened"):
        Bm25Index(folder)
    gc.collect()
    rebuilt = Bm25Index.rebuilt(folder)
    assert len(rebuilt) == 0
    rebuilt.add_many([(1, "a.md", "", "some words")])
    assert _ids(rebuilt.search("words", [""], 10)) == [1]
    rebuilt.close()


def test_stop_words_alone_make_no_match(index: Bm25Index) -> None:
    index.replace("MEMORY.md", [(1, "", "A company in Lyon."), (2, "", "Biscuit is a loyal pet.")])
    assert _ids(index.search("a pet animal", [""], 5)) == [2]  # not chunk 1 through "a"
    assert sorted(_ids(index.search("is it a", [""], 5))) == [1, 2]  # a query of stop words only keeps them
