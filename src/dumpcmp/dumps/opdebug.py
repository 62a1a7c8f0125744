"""OpDebug files: what the runtime writes with acl.json's `"dump_debug": "on"` (overflow/underflow operator dump).

An OpDebug file is an ordinary dump file (the protobuf-headed format of dumps/dump.py) named
``Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp}[.{task_type}.{context_id}.{thread_id}.{device_id}]``;
each of its outputs holds one overflow record as raw bytes, little-endian, in one of two layouts
(docs/formats.md#opdebug-files):

- current (starts with the magic number 0x5A5A5A5A): uint32 ``magic, version``, then the accelerator record
  uint32 ``valid, acc_type, rsv, data_len`` and ``data_len`` bytes of uint64 fields, whose names depend on
  ``acc_type`` (0 AIC, 1 AIV, 2 AICPU, 3 SDMA; `ACC_FIELDS`);
- old (exactly 2048 bytes): three records of six uint64 (``model_id, stream_id, task_id, task_type, pc_start,
  para_base``) at offsets 0 (DHA Atomic Add), 128 (L2 Atomic Add) and 256 (AI Core), then uint64 statuses at 512
  (DHA), 768 (L2) and 1024 (AI Core: ``kernel_code, block_idx, status``).

`read_opdebug(path)` returns one `OpDebugRecord` per output, or raises DumpError naming the file and the field.
`opdebug_bytes(...)` / `old_opdebug_bytes(...)` build the bytes (for `write_dump`: tests and the simulator).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from dumpcmp.dumps.dump import open_dump
from dumpcmp.dumps.naming import parse_device_dump_name
from dumpcmp.errors import DumpError, NamingError

__all__ = [
    "ACC_FIELDS", "ACC_TYPES", "HEX_FIELDS", "INVALID_ID", "MAGIC", "OLD_SIZE", "OLD_TYPES", "OPDEBUG_NAME",
    "OPDEBUG_TYPE", "OpDebugRecord", "Overflow", "is_opdebug_name", "old_opdebug_bytes", "opdebug_bytes",
    "parse_opdebug_bytes", "read_opdebug",
]

OPDEBUG_TYPE, OPDEBUG_NAME = "Opdebug", "Node_OpDebug"
MAGIC = 0x5A5A5A5A
INVALID_ID = 65535  # a context or thread id the runtime did not set
ACC_TYPES = {0: "AIC", 1: "AIV", 2: "AICPU", 3: "SDMA"}
_AI_CORE = ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id", "pc_start", "para_base",
            "core_id", "block_id", "status")
ACC_FIELDS = {
    "AIC": _AI_CORE,
    "AIV": _AI_CORE,
    "AICPU": ("model_id", "stream_id", "task_id", "task_type", "context_id", "cpu_id", "thread_id", "status"),
    "SDMA": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id", "src_addr", "dst_addr",
             "channel_id", "status"),
}
HEX_FIELDS = frozenset({"pc_start", "para_base", "src_addr", "dst_addr", "kernel_code"})
OLD_SIZE = 2048
OLD_TYPES = ("DHA Atomic Add", "L2 Atomic Add", "AI Core")  # in the order the records are reported
_OLD_INFO = ("model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base")
_OLD_INFO_AT = {"DHA Atomic Add": 0, "L2 Atomic Add": 128, "AI Core": 256}
_OLD_STATUS_AT = {"DHA Atomic Add": 512, "L2 Atomic Add": 768, "AI Core": 1024}
_HEADER = 24  # magic, version, valid, acc_type, rsv, data_len


@dataclass(frozen=True)
class Overflow:
    """One overflow status: its type (AIC/AIV/AICPU/SDMA, or AI Core / DHA Atomic Add / L2 Atomic Add in the old
    layout), the ids that find the op's dump, and every field as read (addresses as hex text)."""

    kind: str
    task_id: int
    stream_id: int
    status: int
    context_id: int = INVALID_ID
    thread_id: int = INVALID_ID
    fields: dict = field(default_factory=dict)


@dataclass(frozen=True)
class OpDebugRecord:
    """One output of an OpDebug file. `overflows` holds the records whose status is not 0 (the new layout has one
    record; the old one three). `warnings` are oddities that do not stop the reading (valid != 1, data_len)."""

    path: str
    index: int
    new_layout: bool
    overflows: tuple[Overflow, ...]
    version: int | None = None
    warnings: tuple[str, ...] = ()


def is_opdebug_name(name: str) -> bool:
    """True for a file name ``Opdebug.Node_OpDebug.{ids}``."""
    try:
        parsed = parse_device_dump_name(name)
    except NamingError:
        return False
    return parsed.op_type == OPDEBUG_TYPE and parsed.op_name == OPDEBUG_NAME


def _u(data: bytes, offset: int, size: int, where: str, what: str) -> int:
    if offset + size > len(data):
        raise DumpError(f"{where}: truncated OpDebug record: field {what} needs bytes {offset}..{offset + size} "
                        f"but the record has {len(data)}")
    return struct.unpack_from("<I" if size == 4 else "<Q", data, offset)[0]


def _shown(name: str, value: int) -> int | str:
    return hex(value) if name in HEX_FIELDS else value


def parse_opdebug_bytes(data: bytes, where: str = "OpDebug record", index: int = 0) -> OpDebugRecord:
    """Decode one overflow record (either layout). `where` names it in errors."""
    data = bytes(data)
    if len(data) >= 4 and _u(data, 0, 4, where, "magic") == MAGIC:
        return _parse_new(data, where, index)
    if len(data) != OLD_SIZE:
        raise DumpError(f"{where}: not an OpDebug record: the magic number is not 0x5a5a5a5a and the size is "
                        f"{len(data)} bytes, not the old layout's {OLD_SIZE}")
    overflows = []
    for kind in OLD_TYPES:
        values = {name: _u(data, _OLD_INFO_AT[kind] + 8 * i, 8, where, f"{kind} {name}")
                  for i, name in enumerate(_OLD_INFO)}
        at = _OLD_STATUS_AT[kind]
        if kind == "AI Core":
            values["kernel_code"] = _u(data, at, 8, where, "AI Core kernel_code")
            values["block_idx"] = _u(data, at + 8, 8, where, "AI Core block_idx")
            at += 16
        values["status"] = _u(data, at, 8, where, f"{kind} status")
        if values["status"]:
            overflows.append(Overflow(kind, values["task_id"], values["stream_id"], values["status"],
                                      fields={k: _shown(k, v) for k, v in values.items()}))
    if not overflows:
        raise DumpError(f"{where}: OpDebug record (old layout): the status of AI Core, DHA Atomic Add and "
                        "L2 Atomic Add is 0: no overflow recorded")
    return OpDebugRecord(where, index, False, tuple(overflows))


def _parse_new(data: bytes, where: str, index: int) -> OpDebugRecord:
    version = _u(data, 4, 4, where, "version")
    valid = _u(data, 8, 4, where, "valid")
    acc_number = _u(data, 12, 4, where, "acc_type")
    data_len = _u(data, 20, 4, where, "data_len")
    kind = ACC_TYPES.get(acc_number)
    if kind is None:
        raise DumpError(f"{where}: OpDebug field acc_type is {acc_number}, not one of "
                        + ", ".join(f"{k} ({v})" for k, v in ACC_TYPES.items()))
    names = ACC_FIELDS[kind]
    warnings = []
    if valid != 1:
        warnings.append(f"{where}: OpDebug field valid is {valid}, not 1")
    if data_len != 8 * len(names):
        warnings.append(f"{where}: OpDebug field data_len is {data_len}, not {8 * len(names)} for {kind}")
    values = {name: _u(data, _HEADER + 8 * i, 8, where, name) for i, name in enumerate(names)}
    if not values["status"]:
        raise DumpError(f"{where}: OpDebug field status is 0: no overflow recorded")
    overflow = Overflow(kind, values["task_id"], values["stream_id"], values["status"], values["context_id"],
                        values["thread_id"], fields={k: _shown(k, v) for k, v in values.items()})
    return OpDebugRecord(where, index, True, (overflow,), version, tuple(warnings))


def read_opdebug(path: str | os.PathLike[str]) -> list[OpDebugRecord]:
    """The overflow records of an OpDebug file, one per output; DumpError naming the file and what is wrong."""
    path = os.fspath(path)
    dump = open_dump(path)
    if not dump.outputs:
        raise DumpError(f"{path}: OpDebug file without outputs: the overflow record is an output")
    records = []
    for tensor in dump.outputs:
        problem = tensor.problem()
        if problem:
            raise DumpError(f"{path}: OpDebug {tensor.name}: {problem}")
        records.append(parse_opdebug_bytes(tensor.raw().tobytes(), f"{path}: {tensor.name}", tensor.index))
    return records


def opdebug_bytes(kind: str = "AIC", *, status: int = 1, task_id: int = 0, stream_id: int = 0,
                  context_id: int = INVALID_ID, thread_id: int = INVALID_ID, valid: int = 1, version: int = 0,
                  data_len: int | None = None, **other: int) -> bytes:
    """An overflow record in the current layout (`other`: the remaining fields of `ACC_FIELDS[kind]`, else 0)."""
    number = {v: k for k, v in ACC_TYPES.items()}[kind]
    names = ACC_FIELDS[kind]
    values = dict(other, status=status, task_id=task_id, stream_id=stream_id, context_id=context_id,
                  thread_id=thread_id)
    body = b"".join(struct.pack("<Q", int(values.get(n, 0))) for n in names)
    length = len(body) if data_len is None else data_len
    return struct.pack("<IIIIII", MAGIC, version, valid, number, 0, length) + body


def old_opdebug_bytes(statuses: dict[str, int], *, task_id: int = 0, stream_id: int = 0, **other: int) -> bytes:
    """An overflow record in the old 2048-byte layout; `statuses` maps OLD_TYPES names to their status."""
    data = bytearray(OLD_SIZE)
    for kind in OLD_TYPES:
        values = dict(other, task_id=task_id, stream_id=stream_id)
        for i, name in enumerate(_OLD_INFO):
            struct.pack_into("<Q", data, _OLD_INFO_AT[kind] + 8 * i, int(values.get(name, 0)))
        at = _OLD_STATUS_AT[kind] + (16 if kind == "AI Core" else 0)
        struct.pack_into("<Q", data, at, int(statuses.get(kind, 0)))
    return bytes(data)
