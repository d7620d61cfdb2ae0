"""Ranking skills for `skill_search`: BM25 (k1 1.2, b 0.75) over name, description and text.

tantivy's BM25 uses exactly these parameters; the index lives in memory and is
rebuilt whenever the skills change (there are tens of skills, not millions).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import tantivy

from ._skills import Skill


class SkillIndex:
    def __init__(self, skills: Iterable[Skill]) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("name", stored=True)
        builder.add_text_field("description", stored=False)
        builder.add_text_field("body", stored=False)
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema)
        writer = self._index.writer(heap_size=15_000_000, num_threads=1)
        for skill in skills:
            name = skill.name.replace("-", " ") + " " + skill.name  # words, then the name itself
            writer.add_document(tantivy.Document(name=name, description=skill.description, body=skill.body))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()

    def search(self, query: str, limit: int = 5) -> list[tuple[str, float]]:
        """Skill names with their BM25 scores, best first."""
        words = re.findall(r"\w+", query.lower())
        if not words:
            return []
        parsed = self._index.parse_query(" OR ".join(words), ["name", "description", "body"])
        searcher = self._index.searcher()
        hits = searcher.search(parsed, limit).hits
        results = []
        for score, address in hits:
            name = searcher.doc(address)["name"][0].rsplit(" ", 1)[-1]
            results.append((name, float(score)))
        return results
