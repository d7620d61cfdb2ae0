"""The real local embedder (WordLlama, from its wheel) on a few sentences."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from beamclaw_memory import LocalEmbedder
from beamclaw_memory._local import DIMENSIONS


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


async def test_vectors_have_the_models_shape_and_unit_length(embedder: LocalEmbedder) -> None:
    texts = ["The cat sat on the mat.", "Quarterly revenue grew by ten percent.", "x"]
    vectors = await embedder.embed(texts)
    assert vectors.shape == (3, DIMENSIONS) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert embedder.model == f"wordllama:l2_supercat:{DIMENSIONS}"
    assert (await embedder.embed([])).shape == (0, DIMENSIONS)


async def test_the_same_text_gives_the_same_vector(embedder: LocalEmbedder) -> None:
    first, second = await embedder.embed(["my dentist appointment is on Tuesday"] * 2)
    np.testing.assert_allclose(first, second, rtol=1e-6)


@pytest.mark.parametrize(
    ("query", "related", "unrelated"),
    [
        ("my dog loves going for walks in the park", "the puppy plays fetch outside every morning",
         "the quarterly tax return is due in April"),
        ("I am allergic to peanuts", "nut allergy: avoid food with peanuts",
         "the server runs Debian with a RAID array"),
        ("what programming language does the user prefer", "the user writes most of their code in Python",
         "we went hiking in the Alps last summer"),
        ("flight to Tokyo next month", "booked a plane ticket to Japan",
         "the recipe needs two cups of flour"),
    ],
)  # fmt: skip
async def test_related_sentences_are_closer_than_unrelated_ones(
    embedder: LocalEmbedder, query: str, related: str, unrelated: str
) -> None:
    q, r, u = await embedder.embed([query, related, unrelated])
    assert float(q @ r) > float(q @ u)


def test_the_model_is_loaded_by_the_first_embedding_not_before() -> None:
    program = (
        "import sys, trio\n"
        "from beamclaw_memory import LocalEmbedder\n"
        "embedder = LocalEmbedder()\n"
        "assert 'wordllama' not in sys.modules, 'loaded when made'\n"
        "trio.run(embedder.embed, ['a sentence'])\n"
        "assert 'wordllama' in sys.modules, 'not loaded by the first embedding'\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True, timeout=120)
