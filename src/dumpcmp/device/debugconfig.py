"""SigmaStar's `DebugConfig.txt` (the simulator's dump switches, `dumpcmp debug-config`): written from options and
checked line by line. The text and its writer are `dumpcmp.device.acljson.new_sigmastar_config` (the SDK's
switches and the 122-byte path rule live there); this module adds the reader that checks a user's file.

The format (the SDK user guide, DumpDebug chapter; docs/formats.md "SigmaStar DebugConfig.txt"): one switch a line
(`dumpTensor`, `eliminateGarbage`, `dequantFixed`, `dumpasstring`, `disableDomainFuseOps`, and `dumpdonotrecovery`
seen in SDK copies), a `#` in front turning it off (a `#` line that names no switch is a comment), and `path=` with
the absolute output folder, at most 122 bytes (no `path=`, or an empty one: the simulator writes to $HOME).

`check_debug_config(path)` raises ConfigError naming the file and line of the first error (an unknown switch, with
the closest known one; a switch or `path=` given twice; a relative or too long path; bytes that are not UTF-8 text;
a file that is not a regular file or is over 64 KiB) and returns the settings with warnings for what is legal but
likely unwanted (dumpTensor off: nothing is dumped; dumpasstring on: `auto_dump_debug.sh` needs binary dumps; a
path that does not exist here; Windows line ends).
"""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from dumpcmp.device.acljson import SIGMASTAR_PATH_MAX, SIGMASTAR_SWITCHES
from dumpcmp.errors import ConfigError

__all__ = ["DebugConfig", "KNOWN_SWITCHES", "MAX_BYTES", "check_debug_config"]

#: every switch the simulator is known to read (dumpdonotrecovery: in SDK copies, not in the user guide)
KNOWN_SWITCHES = tuple(SIGMASTAR_SWITCHES) + ("dumpdonotrecovery",)
MAX_BYTES = 64 * 1024
NL = b"\n"


@dataclass
class DebugConfig:
    """A checked DebugConfig.txt: every known switch on or off, the path (None: $HOME), warnings as full lines
    (`FILE:LINE: warning: ...`)."""

    switches: dict[str, bool]
    path: str | None
    warnings: list[str] = field(default_factory=list)


def _read(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a regular file")
        if info.st_size > MAX_BYTES:
            raise ConfigError(f"{path}: {info.st_size} bytes; a DebugConfig.txt is a few lines (at most {MAX_BYTES})")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{path}: over {MAX_BYTES} bytes; a DebugConfig.txt is a few lines")
    return data


def check_debug_config(path: str | os.PathLike[str]) -> DebugConfig:
    """Check a DebugConfig.txt (module doc): ConfigError `FILE:LINE: what` at the first error."""
    path = Path(path)
    data = _read(path)
    nul = data.find(b"\0")
    if nul >= 0:
        raise ConfigError(f"{path}:{data.count(NL, 0, nul) + 1}: a NUL byte: not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}:{data.count(NL, 0, error.start) + 1}: bytes that are not UTF-8 text") from None
    config = DebugConfig({name: False for name in KNOWN_SWITCHES}, None)
    seen: dict[str, int] = {}

    def warn(line: int, what: str) -> None:
        config.warnings.append(f"{path}:{line}: warning: {what}" if line else f"{path}: warning: {what}")

    if "\r" in text:
        warn(text.count("\n", 0, text.index("\r")) + 1,
             "Windows line ends (CR LF); write the file with Unix line ends for the simulator")
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip(" \t\r")
        where = f"{path}:{number}"
        if not line:
            continue
        if line.startswith("path="):
            if "path" in seen:
                raise ConfigError(f"{where}: path= given again (first on line {seen['path']}); keep one")
            seen["path"] = number
            value = line[5:].strip(" \t")
            if value:
                if not value.startswith("/"):
                    raise ConfigError(f"{where}: path {value!r} is not absolute; write the full folder, e.g. "
                                      f"/home/user/dump")
                size = len(value.encode("utf-8"))
                if size > SIGMASTAR_PATH_MAX:
                    raise ConfigError(f"{where}: path is {size} bytes; the simulator takes at most "
                                      f"{SIGMASTAR_PATH_MAX}: choose a shorter folder")
                if not os.path.isdir(value):
                    warn(number, f"path {value} is not a folder here (fine if the simulator runs elsewhere)")
                config.path = value
            continue
        off = line.startswith("#")
        name = line.lstrip("#").strip(" \t")
        if name not in KNOWN_SWITCHES:
            if off:
                continue  # a comment (a misspelt switch commented out is off either way)
            close = difflib.get_close_matches(name, KNOWN_SWITCHES, n=1, cutoff=0.75)
            lowered = {s.lower(): s for s in KNOWN_SWITCHES}.get(name.lower())
            close = [lowered] if lowered else close
            shown = name if len(name) <= 60 else name[:60] + "..."
            hint = f"; did you mean {close[0]!r}?" if close else f"; the switches are {', '.join(KNOWN_SWITCHES)}"
            raise ConfigError(f"{where}: unknown switch {shown!r} (the simulator ignores it){hint}")
        if name in seen:
            raise ConfigError(f"{where}: {name} given again (first on line {seen[name]}); keep one")
        seen[name] = number
        config.switches[name] = not off
    if not config.switches["dumpTensor"]:
        warn(seen.get("dumpTensor", 0), "dumpTensor is off: the simulator dumps nothing")
    if config.switches["dumpasstring"]:
        warn(seen["dumpasstring"], "dumpasstring is on: the dump is text, which auto_dump_debug.sh cannot compare "
                                   "(dumpcmp reads both)")
    if "path" not in seen or config.path is None:
        warn(seen.get("path", 0), "no path: the simulator writes to $HOME")
    return config
