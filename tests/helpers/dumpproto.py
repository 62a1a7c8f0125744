"""An independent reference for the dump header: the spec's DumpData schema built with Google's protobuf package
(a dynamic descriptor, no protoc), so tests can check our C++ decoder and encoder against protobuf itself."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def _schema() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="dumpcmp_test_dump_data.proto", package="toolkit.dumpdata",
                                            syntax="proto3")

    def message(name: str, fields: list[tuple[str, int, int, str | None, bool]]) -> None:
        m = fd.message_type.add(name=name)
        for fname, number, ftype, type_name, repeated in fields:
            f = m.field.add(name=fname, number=number, type=ftype,
                            label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if type_name:
                f.type_name = type_name

    U64, U32, I32 = F.TYPE_UINT64, F.TYPE_UINT32, F.TYPE_INT32
    STR, BYTES, MSG = F.TYPE_STRING, F.TYPE_BYTES, F.TYPE_MESSAGE
    p = ".toolkit.dumpdata."
    message("Shape", [("dim", 1, U64, None, True)])
    message("DimRange", [("dim_start", 1, U64, None, False), ("dim_end", 2, U64, None, False)])
    message("OriginalOp", [("name", 1, STR, None, False), ("output_index", 2, U32, None, False),
                           ("data_type", 3, I32, None, False), ("format", 4, I32, None, False)])
    message("OpOutput", [("data_type", 1, I32, None, False), ("format", 2, I32, None, False),
                         ("shape", 3, MSG, p + "Shape", False), ("original_op", 4, MSG, p + "OriginalOp", False),
                         ("data", 5, BYTES, None, False), ("size", 6, U64, None, False),
                         ("original_shape", 7, MSG, p + "Shape", False), ("sub_format", 8, I32, None, False),
                         ("address", 9, U64, None, False), ("dim_range", 10, MSG, p + "DimRange", True),
                         ("offset", 11, U64, None, False)])
    message("OpInput", [("data_type", 1, I32, None, False), ("format", 2, I32, None, False),
                        ("shape", 3, MSG, p + "Shape", False), ("data", 4, BYTES, None, False),
                        ("size", 5, U64, None, False), ("original_shape", 6, MSG, p + "Shape", False),
                        ("sub_format", 7, I32, None, False), ("address", 8, U64, None, False),
                        ("offset", 9, U64, None, False), ("arg_index", 10, U32, None, False),
                        ("input_type", 11, U32, None, False)])
    message("OpBuffer", [("buffer_type", 1, I32, None, False), ("data", 2, BYTES, None, False),
                         ("size", 3, U64, None, False)])
    message("OpAttr", [("name", 1, STR, None, False), ("value", 2, STR, None, False)])
    message("Workspace", [("type", 1, I32, None, False), ("data", 2, BYTES, None, False),
                          ("size", 3, U64, None, False)])
    message("DumpData", [("version", 1, STR, None, False), ("dump_time", 2, U64, None, False),
                         ("output", 3, MSG, p + "OpOutput", True), ("input", 4, MSG, p + "OpInput", True),
                         ("buffer", 5, MSG, p + "OpBuffer", True), ("op_name", 6, STR, None, False),
                         ("attr", 7, MSG, p + "OpAttr", True), ("space", 8, MSG, p + "Workspace", True),
                         ("dfx_message", 9, STR, None, False)])
    return fd


_pool = descriptor_pool.DescriptorPool()
_pool.Add(_schema())
DumpData = message_factory.GetMessageClass(_pool.FindMessageTypeByName("toolkit.dumpdata.DumpData"))


def current_format(msg, payloads: list[bytes]) -> bytes:
    """A current-format file: length prefix, header, then the raw tensor bytes."""
    head = msg.SerializeToString()
    return len(head).to_bytes(8, "little") + head + b"".join(payloads)
