"""Memory backends: tantivy BM25, vectors, hybrid search and embeddings.

Its workers land with its issue; until then the daemon runs it as an empty supervisor.
"""

__all__: list[str] = []
