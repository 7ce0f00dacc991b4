"""Int8 copies of vector rows and the product that scans them, for an exact top-k that reads a
quarter of the bytes.

An exact cosine scan of 100,000 x 384 float32 reads 154 MB per query (12 ms here, and it
pushes the embedding model's weights out of the cache). Each row is also kept as int8 codes
with its own scale (`x ≈ scale * codes`), and the query likewise; ONNX Runtime's
`MatMulInteger` multiplies them (VNNI on this CPU; numpy has no int8 product). The approximate
scores pick candidates, which are scored exactly in float32. What makes the result exact, not
just usually right: each row's approximation error has a bound (`Codes.error_bounds`), so any
row whose approximate score plus its bound reaches the k-th best exact score is scored exactly
too; every other row is certainly below it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from palaver.knowledge.int8_graph import model_class

if TYPE_CHECKING:
    from numpy.typing import NDArray

LEVELS = 127
_INT8, _INT32 = 3, 6
"""ONNX element types."""
_SLACK = 1e-5
"""Added to every bound for float32 rounding in the scores compared (about 1e-7 each)."""

_session: Any = None
_session_lock = threading.Lock()


@dataclass(frozen=True)
class Codes:
    """Rows as int8 codes, with each row's scale and the sum of its codes' magnitudes."""

    codes: NDArray[np.int8]
    scales: NDArray[np.float32]
    l1: NDArray[np.float32]

    def error_bounds(self, query: NDArray[np.float32], query_scale: float) -> NDArray[np.float32]:
        """For each row, how far its approximate score can be from the exact one: a row's
        codes are within scale/2 of its values, and the query's within query_scale/2."""
        q_l1 = float(np.abs(query).sum())
        bounds = self.scales * (q_l1 + query_scale * self.l1) * 0.5 + _SLACK
        return bounds.astype(np.float32, copy=False)


def encode(rows: NDArray[np.float32]) -> Codes:
    """Each row scaled so that its largest value is 127, rounded."""
    peak = np.abs(rows).max(axis=1) if rows.size else np.zeros(len(rows), np.float32)
    scales = np.where(peak > 0, peak / LEVELS, 1.0).astype(np.float32)
    codes = np.rint(rows / scales[:, None]).astype(np.int8)
    return Codes(codes, scales, np.abs(codes, dtype=np.int32).sum(axis=1).astype(np.float32))


def encode_query(query: NDArray[np.float32]) -> tuple[NDArray[np.int8], float]:
    peak = float(np.abs(query).max())
    scale = peak / LEVELS if peak > 0 else 1.0
    return np.rint(query / scale).astype(np.int8), scale


def approximate(codes: Codes, query_codes: NDArray[np.int8], query_scale: float) -> NDArray[Any]:
    """Every row's approximate score, `scale * query_scale * (codes . query_codes)`."""
    products = _products(codes.codes, query_codes)
    return products.astype(np.float32) * codes.scales * np.float32(query_scale)


def _products(codes: NDArray[np.int8], query_codes: NDArray[np.int8]) -> NDArray[np.int32]:
    found = _scanner().run(None, {"rows": codes, "query": query_codes.reshape(-1, 1)})[0]
    products: NDArray[np.int32] = found.reshape(-1)
    return products


def _scanner() -> Any:
    """One ONNX Runtime session per process, `MatMulInteger` alone, on one thread: the scan
    runs in a worker thread already, and on two cores a second one mostly waits."""
    global _session
    with _session_lock:
        if _session is None:
            import onnxruntime

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            _session = onnxruntime.InferenceSession(
                _graph(), options, providers=["CPUExecutionProvider"]
            )
        return _session


def _graph() -> bytes:
    model = model_class()(ir_version=8)
    model.opset_import.add(domain="", version=13)
    graph = model.graph
    graph.name = "int8_scan"
    for where, name, kind, dims in (
        (graph.input, "rows", _INT8, ("n", "d")),
        (graph.input, "query", _INT8, ("d", 1)),
        (graph.output, "products", _INT32, ("n", 1)),
    ):
        tensor = where.add(name=name).type.tensor_type
        tensor.elem_type = kind
        for dim in dims:
            if isinstance(dim, str):
                tensor.shape.dim.add(dim_param=dim)
            else:
                tensor.shape.dim.add(dim_value=dim)
    graph.node.add(input=["rows", "query"], output=["products"], op_type="MatMulInteger")
    data: bytes = model.SerializeToString()
    return data
