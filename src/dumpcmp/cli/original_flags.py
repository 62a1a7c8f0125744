"""The original tool's current command line (msprobe's `msaccucmp compare` / `convert`), accepted as it is: a
command line spelt the original's way is rewritten into dumpcmp's before argparse reads it, so users' scripts run
unchanged. A flag with no meaning here stops the run (exit 2) saying so.

`compare` is spelt the original's way when it names `-m`/`--my_dump_path` or `-g`/`--golden_dump_path` (the
original requires both); then `-r`, `-s`, `-o` and `-i` have the original's meanings (range, select, output and
input tensor index of `-op`), and `-out` is a folder (made when missing, the current one when not given). dumpcmp's
own options (--force, --quiet, --threads, ...) may be added. `convert` is the original's when it names `-d` or
`--dump_file`; then `-f`, `-s`, `-o`/`-i` (one tensor), `-c` and `-t npy|bin|msnpy` are `convert -format`,
`-shape`, `-tensor output|input -index`, `-custom` and `-file-type`. Both ways, `-alg 0 1 2` (indices separated
by spaces) is read as `-alg 0,1,2`.
"""

from __future__ import annotations

import re

from dumpcmp.errors import ConfigError

__all__ = ["COMPARE_FLAGS", "CONVERT_FLAGS", "compare_words", "convert_words", "original_words"]

#: the original's compare flags -> dumpcmp's spelling ("" : dropped; None: refused, with why)
COMPARE_FLAGS: dict[str, tuple[str, ...] | str | None] = {
    "-m": ("-l",), "--my_dump_path": ("-l",),
    "-g": ("-r",), "--golden_dump_path": ("-r",),
    "-f": ("-f",), "--fusion_rule_file": ("-f",),
    "-q": ("-q",), "--quant_fusion_rule_file": ("-q",),
    "-cf": ("-cf",), "--close_fusion_rule_file": ("-cf",),
    "-out": ("-o",), "--output": ("-o",),
    "-c": ("-c",), "--custom_script_path": ("-c",),
    "-a": ("-a",), "--algorithm_options": ("-a",),
    "-alg": ("-alg",), "--algorithm": ("-alg",),
    "-op": ("-d",), "--op_name": ("-d",),
    "-o": ("-t", "output", "-i"), "--output_tensor": ("-t", "output", "-i"),
    "-i": ("-t", "input", "-i"), "--input_tensor": ("-t", "input", "-i"),
    "-n": ("--top-n",), "--topn": ("--top-n",),
    "-ml": ("--max-lines",), "--max_line": ("--max-lines",),
    "-max": ("--max-elements",), "--max_cmp_size": ("--max-elements",),
    "-r": ("--op-range",), "--range": ("--op-range",),
    "-s": ("--op-select",), "--select": ("--op-select",),
    "-v": "", "--version": "",
}
#: the original's compare switches -> dumpcmp's ("" : nothing to add)
COMPARE_SWITCHES: dict[str, tuple[str, ...]] = {
    "-overflow_detection": ("--overflow-like-original",),
    # as the original's advisor: it turns on overflow detection; dumpcmp's advice is always given
    "-advisor": ("--overflow-like-original",),
    "-ffts": ("--ffts",),
    "-map": ("--op-mapping",), "--mapping": ("--op-mapping",),
    "--ignore_single_op_result": ("--summary-only",),
}
_REFUSED = {
    "-p": "-p/--post_process only applies to PyTorch (.h5) dumps, which dumpcmp does not read",
}
_REFUSED_NAMES = {"--post_process": "-p"}

#: the original's convert flags -> dumpcmp's
CONVERT_FLAGS: dict[str, tuple[str, ...] | None] = {
    "-d": ("-i",), "--dump_file": ("-i",),
    "-out": ("-o",), "--output": ("-o",),
    "-f": ("-format",), "--format": ("-format",),
    "-s": ("-shape",), "--shape": ("-shape",),
    "-o": ("-tensor", "output", "-index"), "--output_tensor": ("-tensor", "output", "-index"),
    "-i": ("-tensor", "input", "-index"), "--input_tensor": ("-tensor", "input", "-index"),
    "-c": ("-custom",), "--custom_script_path": ("-custom",),
    "-t": ("-file-type",), "--type": ("-file-type",),
    "-v": None, "--version": None,
}
#: what needs -f, as the original says it
_CONVERT_NEEDS_FORMAT = {"-tensor output": '"-o" or "--output_tensor"', "-tensor input": '"-i" or "--input_tensor"',
                         "-shape": '"-s" or "--shape"', "-custom": '"-c" or "--custom_script_path"'}
_INDEX = re.compile(r"^[0-9]$")


def _split(word: str) -> tuple[str, str | None]:
    """`--flag=value` -> (--flag, value); anything else -> (word, None)."""
    if word.startswith("--") and "=" in word:
        name, value = word.split("=", 1)
        return name, value
    return word, None


def _join_alg(words: list[str]) -> list[str]:
    """`-alg 0 1 2` (the original's nargs form) -> `-alg 0,1,2`."""
    out: list[str] = []
    i = 0
    while i < len(words):
        out.append(words[i])
        if words[i] in ("-alg", "--algorithm", "--algorithms") and i + 1 < len(words):
            values = [words[i + 1]]
            i += 2
            while i < len(words) and _INDEX.match(words[i]) and _INDEX.match(values[-1]):
                values.append(words[i])
                i += 1
            out.append(",".join(values))
            continue
        i += 1
    return out


def _value(words: list[str], i: int, name: str, inline: str | None) -> tuple[str, int]:
    """The value of the flag at words[i] (given inline as --flag=value, or next) and where the next word is."""
    if inline is not None:
        return inline, i + 1
    if i + 1 >= len(words):
        raise ConfigError(f"{name} needs a value")
    return words[i + 1], i + 2


def _version(name: str, value: str) -> None:
    """-v/--version: accepted and dropped (dump versions are told apart by their contents)."""
    if value not in ("1", "2"):
        raise ConfigError(f"{name} {value}: the dump version is 1 (protobuf) or 2 (binary)")


def _is_original(words: list[str], names: set[str]) -> bool:
    return any(_split(w)[0] in names for w in words)


def compare_words(words: list[str]) -> list[str]:
    """`compare ...` as dumpcmp reads it (words[0] is "compare")."""
    rest = _join_alg(words[1:])
    if not _is_original(rest, {"-m", "--my_dump_path", "-g", "--golden_dump_path"}):
        return [words[0], *rest]
    out: list[str] = []
    given: set[str] = set()
    i = 0
    while i < len(rest):
        name, inline = _split(rest[i])
        refused = _REFUSED.get(_REFUSED_NAMES.get(name, name))
        if refused is not None:
            raise ConfigError(refused)
        if name in COMPARE_SWITCHES:
            out += [w for w in COMPARE_SWITCHES[name] if w not in out]
            i += 1
            continue
        spelling = COMPARE_FLAGS.get(name)
        if name not in COMPARE_FLAGS:
            out.append(rest[i])  # dumpcmp's own option (or its value): as it is
            i += 1
            continue
        value, i = _value(rest, i, name, inline)
        given.add(" ".join(spelling[:2]) if spelling and spelling[0] == "-t" else (spelling[0] if spelling else name))
        if spelling == "":
            _version(name, value)
            continue  # dumpcmp reads both dump versions by their contents
        assert isinstance(spelling, tuple)
        out += [*spelling, value]
    op = "-d" in given
    for flag, what in (("-t output", '"-o" or "--output_tensor"'), ("-t input", '"-i" or "--input_tensor"'),
                       ("--top-n", '"-n" or "--topn"'), ("--max-lines", '"-ml" or "--max_line"')):
        if flag in given and not op:
            raise ConfigError(f"the argument {what} takes effect only when -op exists")
    if "-t output" in given and "-t input" in given:
        raise ConfigError('"-o"/"--output_tensor" and "-i"/"--input_tensor" cannot be used together')
    if "-o" not in given:
        out += ["-o", "."]  # the original writes into the current folder
    elif not op:
        out.append("--output-folder")  # -out is a folder there, made when missing
    return [words[0], *out]


def convert_words(words: list[str]) -> list[str]:
    """`convert ...` as dumpcmp reads it (words[0] is "convert"): the original's `-d DUMPS -out DIR [-f FMT [-s SHAPE]
    [-o IDX | -i IDX] [-c DIR]] [-t npy|bin|msnpy]` is `-type offline -target numpy -i DUMPS -o DIR [-format FMT
    -shape SHAPE -tensor output|input -index IDX -custom DIR] -file-type TYPE`."""
    rest = words[1:]
    if not _is_original(rest, {"-d", "--dump_file"}):
        return words
    out = ["-type", "offline", "-target", "numpy"]
    given: set[str] = set()
    i = 0
    while i < len(rest):
        name, inline = _split(rest[i])
        if name not in CONVERT_FLAGS:
            out.append(rest[i])  # dumpcmp's own option (--force, ...): as it is
            i += 1
            continue
        value, i = _value(rest, i, name, inline)
        spelling = CONVERT_FLAGS[name]
        if spelling is None:
            _version(name, value)
            continue
        if spelling[0] == "-file-type" and value not in ("npy", "bin", "msnpy"):
            raise ConfigError(f"{name} {value}: the output file type is npy, bin or msnpy")
        given.add(" ".join(spelling[:2]) if spelling[0] == "-tensor" else spelling[0])
        out += [*spelling, value]
    if "-tensor output" in given and "-tensor input" in given:
        raise ConfigError('"-o"/"--output_tensor" and "-i"/"--input_tensor" cannot be used together')
    if "-format" not in given:
        for flag, what in _CONVERT_NEEDS_FORMAT.items():
            if flag in given:
                raise ConfigError(f"the argument {what} takes effect only when -f exists")
    if "-o" not in given:
        out += ["-o", "."]  # the original writes into the current folder
    return [words[0], *out]


def original_words(words: list[str]) -> list[str]:
    """A dumpcmp command line with the original tool's spellings rewritten (others unchanged)."""
    if words and words[0] == "compare":
        return compare_words(words)
    if words and words[0] == "convert":
        return convert_words(words)
    return words
