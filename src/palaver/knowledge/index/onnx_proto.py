"""The few fields of ONNX's protobuf messages that `int8_scan` writes, declared here: the `onnx`
package would add 69 MB to the install for one small graph. ONNX Runtime already depends on
protobuf."""

from __future__ import annotations

from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

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
    """The ModelProto message class, with only the fields `int8_scan` writes (its inputs' tensor
    types, its initializer held outside)."""
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
