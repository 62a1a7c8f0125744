"""Text that goes to the terminal: names dumpcmp prints come from files (dump headers, file names, JSON) and may
hold bytes that are not UTF-8 (decoded with surrogateescape, as os.fsdecode does) or characters the locale's
encoding lacks. Under a strict locale such as en_US.UTF-8, Python's stdout refuses them with UnicodeEncodeError;
`escape_unencodable` makes stdout and stderr write them as backslash escapes instead, the same under every locale:
a byte that is not UTF-8 as ``\\xff``, any other character the encoding lacks as ``\\u4e2d`` (backslashreplace's
form).
"""

from __future__ import annotations

import codecs
from typing import Any

ESCAPE = "dumpcmp.escape"  # the codec error handler's name


def _escape(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = []
    for ch in error.object[error.start:error.end]:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape kept: the byte itself
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out), error.end


codecs.register_error(ESCAPE, _escape)


def escape_unencodable(*streams: Any) -> None:
    """Make each text stream write what its encoding cannot hold as escapes (see the module docstring) instead of
    raising. Streams that cannot be reconfigured (a StringIO, which holds any text) are left as they are."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            stream.flush()
            reconfigure(errors=ESCAPE)
        except (AttributeError, ValueError, OSError):
            pass


def escaped(text: str, encoding: str = "utf-8") -> str:
    """`text` as `escape_unencodable`'s streams would show it in `encoding`."""
    return text.encode(encoding, ESCAPE).decode(encoding)
