"""Keyword search: a tantivy index (BM25, English stemming) of an agent's chunks.

The index is derived data: the chunks it holds are also in the agent's chunk store, so
an index that cannot be opened (a crash mid-write, a disk that lost a file, a newer
format) is deleted and rebuilt from there (see `_index`). Each chunk carries its
owner (``""`` for the agent's files, the user's id for a conversation), and every
search is filtered to the owners the caller may see.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import tantivy

#: What a query keeps of the user's text: words only, so no query syntax reaches tantivy.
_WORD: Final = re.compile(r"\w+")
_HEAP: Final = 50_000_000
#: Words of a query past this many are ignored (a query is a few words, not a document).
MAX_QUERY_WORDS: Final = 64


class IndexCorrupted(Exception):
    """The index on disk cannot be read; the message says why. Rebuild it from the store."""


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("id", stored=True, indexed=True, fast=True)
    builder.add_text_field("doc", stored=False, tokenizer_name="raw")
    builder.add_text_field("owner", stored=False, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    return builder.build()


#: Words a query drops (unless it has no others): "a pet animal" must not match "a company"
#: through "a", which the merge would score as the best keyword hit there is.
STOP_WORDS: Final = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from", "had", "has",
    "have", "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not",
    "of", "on", "or", "our", "she", "so", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "you",
    "your",
})  # fmt: skip


def query_words(query: str) -> list[str]:
    """The words of *query* that are searched: lowercased (AND, OR, NOT and IN are operators
    to the query parser, and the index is lowercase), stop words left out."""
    words = [word.lower() for word in _WORD.findall(query)[:MAX_QUERY_WORDS]]
    meaningful = [word for word in words if word not in STOP_WORDS]
    return meaningful or words


class Bm25Index:
    """One agent's keyword index in *folder*. Blocking: call it from a worker thread."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._schema = _schema()
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._index = tantivy.Index(self._schema, path=str(folder), reuse=True)
            self._writer = self._index.writer(heap_size=_HEAP, num_threads=1)
            self._index.reload()
            #: Every owner with chunks here (a removed one may linger: it only costs a term).
            self._owners = {term for term, _ in self._index.searcher().terms_with_prefix("owner", "")}
        except (ValueError, OSError, RuntimeError) as exc:
            raise IndexCorrupted(f"the keyword index in {folder} cannot be opened: {exc}") from None

    @classmethod
    def rebuilt(cls, folder: Path) -> Bm25Index:
        """A new, empty index where *folder* was (whatever it held is deleted)."""
        shutil.rmtree(folder, ignore_errors=True)
        return cls(folder)

    def __len__(self) -> int:
        return int(self._index.searcher().num_docs)

    def replace(self, doc: str, chunks: Iterable[tuple[int, str, str]]) -> None:
        """Drop *doc*'s chunks and add *chunks* ((id, owner, text)) in one commit."""
        self.replace_many([(doc, chunks)])

    def replace_many(self, docs: Iterable[tuple[str, Iterable[tuple[int, str, str]]]]) -> None:
        """`replace` for each (doc, chunks), all in one commit (a commit costs a segment)."""
        for doc, chunks in docs:
            self._writer.delete_documents_by_term("doc", doc)
            for chunk_id, owner, text in chunks:
                self._writer.add_document(tantivy.Document(id=chunk_id, doc=doc, owner=owner, text=text))
                self._owners.add(owner)
        self._writer.commit()
        self._index.reload()

    def add_many(self, rows: Iterable[tuple[int, str, str, str]]) -> None:
        """Add (id, doc, owner, text) rows in one commit (a rebuild)."""
        for chunk_id, doc, owner, text in rows:
            self._writer.add_document(tantivy.Document(id=chunk_id, doc=doc, owner=owner, text=text))
            self._owners.add(owner)
        self._writer.commit()
        self._index.reload()

    def remove(self, doc: str) -> None:
        self._writer.delete_documents_by_term("doc", doc)
        self._writer.commit()
        self._index.reload()

    def search(self, query: str, owners: Iterable[str], limit: int) -> list[tuple[int, float]]:
        """(chunk id, BM25 score) of the best *limit* chunks of *owners* for *query*.

        The chunks of every other owner are excluded in the query itself (a ``MustNot`` of
        their owner terms: cheaper than requiring one of *owners*, which reads the whole
        owner column, and it leaves the BM25 scores as they are).
        """
        words = query_words(query)
        if not words:
            return []
        parsed = self._index.parse_query(" ".join(words), ["text"])
        hidden = sorted(self._owners - set(owners))
        if hidden:
            excluded = tantivy.Query.term_set_query(self._schema, "owner", hidden)
            parsed = tantivy.Query.boolean_query([(tantivy.Occur.Must, parsed), (tantivy.Occur.MustNot, excluded)])
        searcher = self._index.searcher()
        hits = searcher.search(parsed, limit, count=False).hits
        ids: list[Any] = searcher.fast_field_values("id", [address for _, address in hits])
        return [(int(chunk_id), float(score)) for chunk_id, (score, _) in zip(ids, hits, strict=True)]

    def close(self) -> None:
        self._writer.wait_merging_threads()
