"""Int8 codes of a large matrix's rows, packed once by ONNX Runtime, for an exact top-k that
reads a quarter of the bytes.

An exact cosine scan of 100,000 x 384 float32 reads 154 MB per query (7 to 21 ms here,
depending on the load). Each row is also coded as int8 with its own scale (`x ≈ scale *
codes`), and the codes are made a constant of an ONNX Runtime session, which packs them once
for its `MatMulInteger` (U8S8: the query's codes + 64 as uint8, the offset taken back with each
row's code sum): 3.2 ms against 15.3 ms, paired. Numpy has no int8 product, and handed the codes
as an input ONNX Runtime packs them on every call and gains nothing.

The int8 scores only pick candidates, which are scored exactly in float32. What makes the top
exact, not just usually right: each row's int8 error has a worst-case bound (`error_bounds`),
and every row whose int8 score plus its bound reaches the k-th best exact score is scored
exactly too; every other row is certainly below it.

The query has 7-bit codes (-63..63), the rows 8-bit ones. Without AVX-512 VNNI or AVX-VNNI,
ONNX Runtime's U8S8 kernel multiplies with `vpmaddubsw`, which adds each pair of u8 x s8
products into a saturating int16: 255 x 127 x 2 overflows it, and on such CPUs (AVX2 alone)
the products were wrong for up to 7% of the rows, by more than the bound. With the query's
codes at most 127, a pair sums to at most 2 x 127 x 127 = 32,258, so every kernel computes the
same exact integers. The coarser query codes would widen the bound by half; taking for each
term of the error the tighter of its L1 and L2 bounds (`error_bounds`) brings it back to within
a tenth of the 8-bit codes' L1 bound on Gaussian and clustered 384-dimension rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

PREFILTER_ROWS = 20_000
"""From this many rows a matrix gets a packed scan: below it the float32 scan takes under 2 ms."""
CANDIDATES = 200
"""Rows scored exactly after the int8 scan, before those its error bounds add (none, on the
benchmark's vectors)."""
LEVELS = 127
"""A row's codes span -127..127."""
QUERY_LEVELS = 63
"""The query's codes span -63..63, stored as uint8 with `QUERY_OFFSET` added: no pair of
products can saturate a 16-bit sum (see the module's docstring)."""
QUERY_OFFSET = 64
_UINT8, _INT8, _INT32 = 2, 3, 6
"""ONNX element types."""
_EXTERNAL = 1
"""TensorProto.data_location: the data is not in the graph."""
_BLOCK = 4096
"""Rows coded at a time: a 100,000-row matrix then needs 7 MB of float temporaries, not 300."""
_SLACK = 1e-5
"""Added to every bound for float32 rounding in the scores compared (about 1e-7 each)."""


def encode_query(query: NDArray[np.float32]) -> tuple[NDArray[np.uint8], float]:
    """The query as uint8 (7-bit codes + `QUERY_OFFSET`) and its scale."""
    peak = float(np.abs(query).max())
    scale = peak / QUERY_LEVELS if peak > 0 else 1.0
    codes = np.rint(query / scale).astype(np.int16) + QUERY_OFFSET
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
        self._coded_l1 = np.empty(self.rows, dtype=np.float32)
        self._coded_l2 = np.empty(self.rows, dtype=np.float32)
        self._error_max = np.empty(self.rows, dtype=np.float32)
        self._error_l2 = np.empty(self.rows, dtype=np.float32)
        for start in range(0, self.rows, _BLOCK):
            block = vectors[start : start + _BLOCK].astype(np.float64)
            end = start + len(block)
            peak = np.abs(block).max(axis=1)
            scales = np.where(peak > 0, peak / LEVELS, 1.0).astype(np.float32)
            codes = np.rint(block / scales[:, None]).astype(np.int8)
            coded = codes * scales[:, None].astype(np.float64)
            error = block - coded
            codes_t[:, start:end] = codes.T
            self.scales[start:end] = scales
            self._offset[start:end] = QUERY_OFFSET * codes.sum(axis=1, dtype=np.int32)
            self._coded_l1[start:end] = np.abs(coded).sum(axis=1)
            self._coded_l2[start:end] = np.sqrt(np.square(coded).sum(axis=1))
            self._error_max[start:end] = np.abs(error).max(axis=1)
            self._error_l2[start:end] = np.sqrt(np.square(error).sum(axis=1))
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
        self.nbytes = 2 * codes_t.nbytes + 24 * self.rows
        """The codes and the session's packed copy, and six numbers a row."""

    def approximate(self, query_codes: NDArray[np.uint8], query_scale: float) -> NDArray[Any]:
        """Every row's int8 score, `scale * query_scale * (codes . query_codes)`."""
        found = self._session.run(None, {"query": query_codes})[0].reshape(-1)
        found -= self._offset
        scores: NDArray[np.float32] = found.astype(np.float32)
        scores *= self.scales * np.float32(query_scale)
        return scores

    def error_bounds(
        self, query: NDArray[np.float32], query_codes: NDArray[np.uint8], query_scale: float
    ) -> NDArray[Any]:
        """For each row, how far its int8 score can be from the exact one.

        With a row `r = s*c + e` and the query `q = t*d + f` (codes `c`, `d`, scales `s`, `t`,
        rounding errors `e`, `f`), the exact score less the int8 one is `(s*c).f + e.q`; each
        term is bounded by Hölder's inequality with the tighter of (L1, max) and (L2, L2)."""
        query64 = query.astype(np.float64)
        codes = query_codes.reshape(-1).astype(np.float64) - QUERY_OFFSET
        error = query64 - codes * query_scale
        f_max = np.float32(np.abs(error).max())
        f_l2 = np.float32(np.sqrt(np.square(error).sum()))
        q_l1 = np.float32(np.abs(query64).sum())
        q_l2 = np.float32(np.sqrt(np.square(query64).sum()))
        bounds: NDArray[np.float32] = np.minimum(self._coded_l1 * f_max, self._coded_l2 * f_l2)
        bounds += np.minimum(self._error_max * q_l1, self._error_l2 * q_l2)
        bounds += np.float32(_SLACK)
        return bounds


def _graph(dim: int, rows: int) -> bytes:
    """`MatMulInteger(query, codes)`, the codes an initializer whose data the session options
    hand over (serialized into the graph they would be copied three times on the way)."""
    from palaver.knowledge.index.onnx_proto import model_class  # protobuf, when first scanned

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
