"""Int8 codes of a large matrix's rows, packed once by ONNX Runtime, for an exact top-k that
reads a quarter of the bytes.

An exact cosine scan of 100,000 x 384 float32 reads 154 MB per query (7 to 21 ms here,
depending on the load). Each row is also coded as int8 with its own scale (`x ≈ scale *
codes`), and the codes are made a constant of an ONNX Runtime session, which packs them once
for its `MatMulInteger` (U8S8: the query as uint8, codes + 128, the offset taken back with each
row's code sum): 3.2 ms against 15.3 ms, paired. Numpy has no int8 product, and handed the codes
as an input ONNX Runtime packs them on every call and gains nothing.

The int8 scores only pick candidates, which are scored exactly in float32. What makes the top
exact, not just usually right: each row's int8 error has a worst-case bound (`error_bounds`),
and every row whose int8 score plus its bound reaches the k-th best exact score is scored
exactly too; every other row is certainly below it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from palaver.knowledge.int8_graph import model_class

if TYPE_CHECKING:
    from numpy.typing import NDArray

PREFILTER_ROWS = 20_000
"""From this many rows a matrix gets a packed scan: below it the float32 scan takes under 2 ms."""
CANDIDATES = 200
"""Rows scored exactly after the int8 scan, before those its error bounds add (none, on the
benchmark's vectors)."""
LEVELS = 127
_UINT8, _INT8, _INT32 = 2, 3, 6
"""ONNX element types."""
_EXTERNAL = 1
"""TensorProto.data_location: the data is not in the graph."""
_BLOCK = 4096
"""Rows coded at a time: a 100,000-row matrix then needs 7 MB of float temporaries, not 300."""
_SLACK = 1e-5
"""Added to every bound for float32 rounding in the scores compared (about 1e-7 each)."""


def encode_query(query: NDArray[np.float32]) -> tuple[NDArray[np.uint8], float]:
    """The query as uint8 (int8 codes + 128) and its scale."""
    peak = float(np.abs(query).max())
    scale = peak / LEVELS if peak > 0 else 1.0
    codes = np.rint(query / scale).astype(np.int16) + 128
    return codes.astype(np.uint8).reshape(1, -1), scale


class PackedScan:
    """Int8 codes of a matrix's first `rows` rows as they were at `version`, held packed by a
    one-thread ONNX Runtime session (the search runs in a worker thread already)."""

    def __init__(self, vectors: NDArray[np.float32], version: int) -> None:
        import onnxruntime

        self.version = version
        self.rows, dim = vectors.shape
        codes_t = np.empty((dim, self.rows), dtype=np.int8)
        self.scales = np.empty(self.rows, dtype=np.float32)
        self._offset = np.empty(self.rows, dtype=np.int32)
        l1 = np.empty(self.rows, dtype=np.float32)
        for start in range(0, self.rows, _BLOCK):
            block = vectors[start : start + _BLOCK]
            end = start + len(block)
            peak = np.abs(block).max(axis=1)
            scales = np.where(peak > 0, peak / LEVELS, 1.0).astype(np.float32)
            codes = np.rint(block / scales[:, None]).astype(np.int8)
            codes_t[:, start:end] = codes.T
            self.scales[start:end] = scales
            self._offset[start:end] = 128 * codes.sum(axis=1, dtype=np.int32)
            l1[start:end] = np.abs(codes, dtype=np.int32).sum(axis=1)
        self._half_scales = self.scales * np.float32(0.5)
        self._half_l1_scales = self._half_scales * l1
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._codes_t = codes_t
        """Handed to the session without a copy (`add_external_initializers`): kept alive."""
        options.add_external_initializers(
            ["codes"], [onnxruntime.OrtValue.ortvalue_from_numpy(codes_t)]
        )
        self._session: Any = onnxruntime.InferenceSession(
            _graph(dim, self.rows), options, providers=["CPUExecutionProvider"]
        )
        self.nbytes = 2 * codes_t.nbytes + 16 * self.rows
        """The codes and the session's packed copy, and four numbers a row."""

    def approximate(self, query_codes: NDArray[np.uint8], query_scale: float) -> NDArray[Any]:
        """Every row's int8 score, `scale * query_scale * (codes . query_codes)`."""
        found = self._session.run(None, {"query": query_codes})[0].reshape(-1)
        found -= self._offset
        scores: NDArray[np.float32] = found.astype(np.float32)
        scores *= self.scales * np.float32(query_scale)
        return scores

    def error_bounds(self, query: NDArray[np.float32], query_scale: float) -> NDArray[Any]:
        """For each row, how far its int8 score can be from the exact one: a row's codes are
        within scale/2 of its values, and the query's within query_scale/2."""
        q_l1 = np.float32(np.abs(query).sum())
        bounds: NDArray[np.float32] = self._half_scales * q_l1
        bounds += self._half_l1_scales * np.float32(query_scale) + np.float32(_SLACK)
        return bounds


def _graph(dim: int, rows: int) -> bytes:
    """`MatMulInteger(query, codes)`, the codes an initializer whose data the session options
    hand over (serialized into the graph they would be copied three times on the way)."""
    model = model_class()(ir_version=8)
    model.opset_import.add(domain="", version=13)
    graph = model.graph
    graph.name = "int8_scan"
    for where, name, kind, dims in (
        (graph.input, "query", _UINT8, (1, dim)),
        (graph.output, "products", _INT32, (1, rows)),
    ):
        tensor = where.add(name=name).type.tensor_type
        tensor.elem_type = kind
        for size in dims:
            tensor.shape.dim.add(dim_value=size)
    codes = graph.initializer.add(
        name="codes", data_type=_INT8, dims=[dim, rows], data_location=_EXTERNAL
    )
    for key, value in (("location", "codes"), ("offset", "0"), ("length", str(dim * rows))):
        codes.external_data.add(key=key, value=value)
    graph.node.add(input=["query", "codes"], output=["products"], op_type="MatMulInteger")
    data: bytes = model.SerializeToString()
    return data
