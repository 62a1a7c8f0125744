"""Reading the JSON files users hand to dumpcmp (graph JSON, quantization fusion rules, acl.json) the same way
everywhere: a size bound checked before reading, a UTF-8 byte-order mark accepted, text that is not UTF-8, nesting
deeper than any real file, an unpaired surrogate escape (`"\\udcff"`: no character, so no name can be printed or
written as it; strict parsers such as the device's refuse it) and invalid JSON refused with a `ConfigError` naming
the file (never a RecursionError, MemoryError or UnicodeEncodeError later).
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

from dumpcmp.errors import ConfigError
from dumpcmp.support.lazy_numpy import np

MAX_DEPTH = 256  # real files nest fewer than 20 levels
MAX_BYTES = 4 << 30
BOM = b"\xef\xbb\xbf"
# a \uXXXX escape of a surrogate (an odd number of backslashes before the u): a high one with the low one that pairs
# with it (text), or either alone (not text)
_SURROGATE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u(?:(d[89ab][0-9a-f]{2})(\\ud[c-f][0-9a-f]{2})?"
                               r"|(d[c-f][0-9a-f]{2}))", re.IGNORECASE)


def read_bytes(path: str | os.PathLike[str], what: str = "JSON file", max_bytes: int = MAX_BYTES) -> bytes:
    """The file's bytes, refusing a file larger than `max_bytes` before reading it."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > max_bytes:
                raise ConfigError(f"{name}: {size} bytes, larger than any {what} dumpcmp reads ({max_bytes})")
            return f.read(max_bytes + 1)
    except OSError as error:
        raise ConfigError(f"{name}: cannot read the {what}: {error.strerror or error}") from None


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a parsed value (without recursion), stopping once past `limit`."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            items = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        stack.extend((x, d + 1) for x in items)
    return deepest


_BRACKETS = bytes.maketrans(b"[]{}", b"()()")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b'[]{}"')


def text_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a valid JSON text (what `depth` says of its value), stopping once past `limit`, found in the
    text without walking the parsed value in Python. Escaped backslashes, then escaped quotes, are cut out (pairs
    taken from the left, as a JSON reader takes them), every byte but brackets and quotes dropped, and what lies
    between quotes (inside strings) with them; the brackets, now ( and ), lose their innermost level at each
    `replace("()", "")` (a pair that only becomes () in a round is left for the next), so the number of rounds until
    nothing is left is the depth."""
    return bytes_depth(text.encode("utf-8", "surrogatepass"), limit)


def bytes_depth(data: bytes, limit: int = MAX_DEPTH) -> int:
    """`text_depth` of a JSON text's UTF-8 bytes."""
    raw = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # two quotes side by side hold no bracket between them (a string without one, or the gap between two strings):
    # dropping them keeps the rest paired, and leaves few strings to split out
    kept = raw.translate(_BRACKETS, _NOT_BRACKETS).replace(b'""', b"")
    brackets = b"".join(kept.split(b'"')[::2]) if b'"' in kept else kept
    deepest = 0
    budget, scanned = 8 * len(brackets) + (16 << 20), 0  # a real graph's rounds scan ~3x its brackets in all
    while brackets and deepest <= limit:
        if scanned > budget:  # deep and wide (hostile): rounds would cost depth x size, so count the rest
            return deepest + bracket_depth(brackets, limit - deepest)
        scanned += len(brackets)
        deepest += 1
        brackets = brackets.replace(b"()", b"")
    return deepest


def bracket_depth(brackets: bytes, limit: int = MAX_DEPTH) -> int:
    """Deepest level of a balanced run of ( and ), stopping once past `limit`: a running count with NumPy, a slice
    at a time (linear in the size, a bounded amount of memory)."""
    deepest = level = 0
    view = np.frombuffer(brackets, np.uint8)
    for start in range(0, len(view), 1 << 22):
        running = np.cumsum((view[start:start + (1 << 22)] == ord("(")).astype(np.int32) * 2 - 1) + level
        deepest = max(deepest, int(running.max()))
        level = int(running[-1])
        if deepest > limit:
            break
    return deepest


def decode(raw: bytes, where: str) -> str:
    """UTF-8 text without the byte-order mark; ConfigError naming the byte and line otherwise."""
    if raw.startswith(BOM):
        raw = raw[len(BOM):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ConfigError(f"{where}: not a JSON file: not UTF-8 text (byte {error.start}, line {line})") from None


def unpaired_surrogate(text: str) -> tuple[str, int] | None:
    """The first unpaired surrogate escape of a JSON text and its line (`("\\ud800", 3)`), or None."""
    if "\\u" not in text:
        return None
    for m in _SURROGATE_ESCAPE.finditer(text):
        if m.group(2) is None:
            lone = m.group(1) or m.group(3)
            return "\\u" + lone, text.count("\n", 0, m.start()) + 1
    return None


def _orjson() -> Any:
    """The orjson module (None without it), first imported with SIGINT, SIGTERM and SIGHUP deferred: a signal's
    exception raised inside its initialisation crashes the interpreter (SIGSEGV in 160 of 200 SIGINTs sent during
    `import orjson`; tests/support/test_jsonfile_fast.py)."""
    module = sys.modules.get("orjson")
    if module is not None:
        return module
    from dumpcmp.support.files import signals_deferred

    try:
        with signals_deferred():
            import orjson
    except ImportError:
        return None
    return orjson


_NOT_PARSED = object()
# a run of 19 digits or more (a number orjson reads as a float where the standard library keeps an int), found by
# a translate of the bytes and a find: a regular expression takes several times longer on a graph of tens of MB
_DIGITS_TO_ZERO = bytes(ord("0") if chr(c).isdigit() and c < 128 else ord(" ") for c in range(256))
_LONG_NUMBER = b"0" * 19


def _fast_loads(text: str, long_number: bool) -> Any:
    """The value of a JSON text read by orjson (several times faster than the standard library on a graph JSON of
    tens of MB), or _NOT_PARSED where the standard library must read it: without orjson, for numbers orjson would
    read otherwise (integers past 64 bits: `long_number`), and for text orjson refuses (the standard library accepts
    NaN and Infinity, and words its own errors with line and column)."""
    orjson = _orjson()
    if orjson is None:  # a dependency; a source checkout without it still reads JSON
        return _NOT_PARSED
    if long_number:
        return _NOT_PARSED
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOT_PARSED


def _scan(data: bytes, max_depth: int) -> tuple[bool, bool]:
    """(deeper than `max_depth`, holds a number of 19 digits or more) of a JSON text's UTF-8 bytes: found before
    parsing, so that the bytes (and the scans' copies) are gone before the parsed value is built. The depth only
    counts for a text that then parses (`bytes_depth` reads valid JSON)."""
    return bytes_depth(data, max_depth) > max_depth, _LONG_NUMBER in data.translate(_DIGITS_TO_ZERO)


def loads(text: str, where: str, *, max_depth: int = MAX_DEPTH, **kwargs: Any) -> Any:
    """json.loads with the nesting bound; ConfigError naming `where` for invalid or too deep JSON."""
    return _loads(text, _scan(text.encode("utf-8", "surrogatepass"), max_depth), where, max_depth, **kwargs)


def _loads(text: str, scanned: tuple[bool, bool], where: str, max_depth: int, **kwargs: Any) -> Any:
    """`loads` of `text`, whose bytes' `_scan` is `scanned`."""
    too_deep, long_number = scanned
    try:
        value = _fast_loads(text, long_number) if not kwargs else _NOT_PARSED
        if value is _NOT_PARSED:
            value = json.loads(text, **kwargs)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{where}: not a JSON file: {error.msg} at line {error.lineno}, column {error.colno}") \
            from None
    except RecursionError:
        raise ConfigError(f"{where}: JSON nested too deeply (more than {max_depth} levels)") from None
    except ValueError as error:  # numbers with thousands of digits
        raise ConfigError(f"{where}: not a JSON file: {error}") from None
    if too_deep:
        raise ConfigError(f"{where}: JSON nested too deeply (more than {max_depth} levels)")
    lone = unpaired_surrogate(text)
    if lone is not None:
        raise ConfigError(f"{where}: not a JSON file of text: the unpaired surrogate escape {lone[0]} at line "
                          f"{lone[1]} stands for no character")
    return value


def load(path: str | os.PathLike[str], what: str = "JSON file", *, max_bytes: int = MAX_BYTES,
         max_depth: int = MAX_DEPTH, **kwargs: Any) -> Any:
    """Read and parse a JSON file (see the module docstring). The file's bytes are scanned as read (no second
    UTF-8 copy of a 200 MB graph) and dropped before the value is built."""
    name = os.fspath(path)
    return load_bytes(read_bytes(name, what, max_bytes), name, max_depth=max_depth, **kwargs)


def load_bytes(raw: bytes, name: str, *, max_depth: int = MAX_DEPTH, **kwargs: Any) -> Any:
    """`load` of a file's bytes as `read_bytes` read them (`name`: the file's name, for the errors)."""
    text = decode(raw, name)
    scanned = _scan(raw[len(BOM):] if raw.startswith(BOM) else raw, max_depth)
    del raw
    return _loads(text, scanned, name, max_depth, **kwargs)


def _plain(data: bytes) -> bool:
    """orjson's text is the standard library's: ASCII without DEL (0x7f, which orjson leaves raw and the standard
    library escapes, so that a value's text does not depend on what else is written with it)."""
    return data.isascii() and b"\x7f" not in data


def dumps_text(value: Any) -> str:
    """`value` as JSON text indented by two spaces, ending in a newline: written by orjson (a tree of 10^6 dumps'
    `info` in seconds; the standard library's indented writer is pure Python and takes minutes), by the standard
    library where orjson cannot or would write otherwise (names that are not UTF-8, which only `\\u` escapes carry;
    non-ASCII text, escaped as before for terminals that take ASCII only; integers past 64 bits). A float that is
    not finite is null (valid JSON), not the standard library's NaN."""
    orjson = _orjson()
    if orjson is not None:
        try:
            data = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
            if _plain(data):
                return data.decode("ascii")
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(value, indent=2) + "\n"


class Streamed:
    """A list of `write_text`'s value written as its items are produced (an iterable read once): a tree of 10^6
    dumps' `info` never holds its records, nor its text, whole."""

    __slots__ = ("items", "level")

    def __init__(self, items: Any) -> None:
        self.items = items
        self.level = 0
        """The level its items are written at, set by `write_text` as it starts the list: a producer of `Rendered`
        items can write them at that level (0 until then)."""


class Rendered:
    """`count` consecutive items of a `Streamed` list already written as JSON text by the core: what `dumps_text`
    writes for each (without its newline), joined by ``",\\n"``, every line after the first indented `level` levels
    more (two spaces a level). `write_text` indents them to their place (nothing left to do when `level` is it)."""

    __slots__ = ("text", "count", "level")

    def __init__(self, text: str, count: int = 1, level: int = 0) -> None:
        self.text, self.count, self.level = text, count, level


def rendered(items: list[Any]) -> Rendered | None:
    """`items` (values holding no Streamed) as one `Rendered`, written by orjson in one call: the text `dumps_text`
    gives each, joined. None where `dumps_text` would not use orjson for them (then write them one by one)."""
    orjson = _orjson()
    if orjson is None or not items:
        return None
    try:
        data = orjson.dumps(items, option=orjson.OPT_INDENT_2)
    except TypeError:
        return None
    if not _plain(data):
        return None
    # "[\n  item,\n  item\n]": the items one level in (a JSON string holds no raw newline)
    return Rendered(data[4:-2].decode("ascii"), len(items), 1)


def _leaf_text(value: Any) -> str:
    # what dumps_text writes for a value that holds no Streamed, without its newline
    return dumps_text(value)[:-1]


def _holds_streamed(value: Any, deep: bool) -> bool:
    if isinstance(value, Streamed):
        return True
    if isinstance(value, dict):
        values: Any = value.values()
    elif isinstance(value, list):
        values = value
    else:
        return False
    if deep:
        return any(_holds_streamed(v, True) for v in values)
    return any(isinstance(v, Streamed) for v in values)


_FLUSH = 1 << 20


def write_text(value: Any, write: Any) -> None:
    """`dumps_text(value)` given to `write` in pieces of about a megabyte, `Streamed` lists written as their items
    come: the same text as dumps_text of the value with every Streamed made a list, each value that holds no
    Streamed written by dumps_text (orjson, or the standard library where orjson cannot or would write otherwise).
    Outside Streamed lists, Streamed lists may be anywhere; their items (the many records) hold Streamed lists only
    as their own values, not deeper."""
    pieces: list[str] = []
    size = 0

    def put(text: str) -> None:
        nonlocal size
        pieces.append(text)
        size += len(text)
        if size >= _FLUSH:
            write("".join(pieces))
            pieces.clear()
            size = 0

    _write(value, 0, put, True)
    put("\n")
    write("".join(pieces))


def _write(value: Any, level: int, write: Any, deep: bool) -> None:
    if type(value) is Rendered:
        # every line after the first starts with its level's spaces (a JSON string holds no raw newline): one pass
        text = value.text
        if level != value.level:
            text = text.replace("\n" + "  " * value.level, "\n" + "  " * level)
        write(text)
        return
    if not _holds_streamed(value, deep):
        text = _leaf_text(value)
        write(text.replace("\n", "\n" + "  " * level) if level and "\n" in text else text)
        return
    pad = "\n" + "  " * (level + 1)
    if isinstance(value, dict):
        first = True
        for key, item in value.items():
            write(("{" if first else ",") + pad + _leaf_text(key) + ": ")
            first = False
            _write(item, level + 1, write, deep)
        write("\n" + "  " * level + "}")
        return
    streamed = isinstance(value, Streamed)
    if streamed:
        value.level = level + 1
    first = True
    for item in value.items if streamed else value:
        write("[" + pad if first else "," + pad)
        first = False
        _write(item, level + 1, write, deep and not streamed)
    write("[]" if first else "\n" + "  " * level + "]")
