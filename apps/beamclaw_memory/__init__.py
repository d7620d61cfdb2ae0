"""Long-term memory: hybrid search over what each agent knows.

Each agent's MEMORY.md, daily logs, configured workspace files and past conversations
are cut into chunks (`chunk_text`), indexed for keywords (tantivy BM25) and for
meaning (vectors from the embedder: a local model that ships in a package, or any
OpenAI-compatible ``/v1/embeddings``), and searched with both at once (`merge`).
Every index is derived data, kept by a process of its own that repairs it from the
files when it is lost; see `_tree` for the supervision tree.
"""

from ._api import MemoryUnavailable, read_lines, reindex, remember, remember_now, search, status, sync
from ._bm25 import Bm25Index, IndexCorrupted
from ._cache import EmbeddingCache
from ._chunker import Chunk, chunk_text, tokens
from ._config import EmbeddingConfig, MemoryConfig, SearchConfig, parse_memory_config
from ._embedding import Embedder, EmbeddingError, OpenAIEmbedder
from ._hybrid import Scored, merge
from ._local import LocalEmbedder, LocalModelMissing
from ._messages import Hit, SearchResult
from ._remembered import SCHEMA
from ._tools import MAX_QUERY_CHARS, format_result
from ._tree import memory_tree, supervision_tree
from ._vectors import VectorSet

__all__ = [
    "MAX_QUERY_CHARS",
    "SCHEMA",
    "Bm25Index",
    "Chunk",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingConfig",
    "EmbeddingError",
    "Hit",
    "IndexCorrupted",
    "LocalEmbedder",
    "LocalModelMissing",
    "MemoryConfig",
    "MemoryUnavailable",
    "OpenAIEmbedder",
    "Scored",
    "SearchConfig",
    "SearchResult",
    "VectorSet",
    "chunk_text",
    "format_result",
    "memory_tree",
    "merge",
    "parse_memory_config",
    "read_lines",
    "reindex",
    "remember",
    "remember_now",
    "search",
    "status",
    "supervision_tree",
    "sync",
    "tokens",
]
