"""The name rules, now parsed once in C++ (`_core.scan.parse_name` behind `naming.parse_name`,
`parse_device_dump_name`, `parse_framework_dump_name`, `classify`), give on every name what main's Python regexes
gave before #35 moved them: the same parsed names and the same NamingError texts. The expected outputs were captured
from main's code (`python tests/dumps/test_naming_main_rules.py > tests/dumps/data/naming_main.json` with main's
src on PYTHONPATH) and are kept as data: names of every form, and random names from the parts below."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

T0 = "1700000000000000"
PARTS = ["a", "Conv2D", "op_1", "0", "12", "007", T0, "npy", "pb", "quant", "output", "input", "2x3", "FFTSPLUS",
         "4", "\u00e9", "x\udcff", "", " ", "\u0663", "a/b", "\n", "\0", "\ud800", "18446744073709551615",
         "18446744073709551616", "000000000000000000000000001", "_", "-", "Npy", "npy ", "x_Y", "1x2x3"]
FORMS = [
    f"Add.a.1.{T0}", f"Add.a.1.2.{T0}", f"Add.a.1.2.3.{T0}", f"Add.a.1.2.3.{T0}.4.1.0.0",
    f"Add.a.1.{T0}.FFTSPLUS.1.0.0", f"Add.a.1.2.{T0}.x_Y.1.0.0", f"Add.a.1.2.3.4.{T0}.4.1.0.0", f"Add.a.1.{T0}\u0663",
    f"a.0.{T0}.npy", f"a.0.{T0}.pb", f"a.0.{T0}.quant", f"a.b.0.{T0}.npy", f"Add.a.1.{T0}.output.0.2x3.npy",
    f"Add.a.1.{T0}.input.1.npy", f"Add.a.1.{T0}.output.0.224.npy", "Add.a.1.18446744073709551616",
    "a.18446744073709551616.1.npy", f"Add.a.{'9' * 40}.{T0}.4.{'1' * 30}.0.0", "1234", "1234.npy", "statistic.csv",
    f"dir/Add.a.1.{T0}", f"dir/a.0.{T0}.npy", "", ".", "..", f"Add.a.1.{T0}.", f".Add.a.1.{T0}", f"Add..1.{T0}",
]
FRAMEWORK_EXTENSIONS = [("pb", "quant", "npy"), ("npy",), ("pb", "quant")]


def names() -> list[str]:
    rng = random.Random(35)
    anything = [".".join(rng.choice(PARTS) for _ in range(rng.randint(1, 12))) for _ in range(1500)]
    numbers = ["0", "12", T0, "4", "007"] * 6 + ["FFTSPLUS", "x_Y", "npy", "pb", "18446744073709551616", "", "2x3"]
    near = [".".join([rng.choice(["Add", "\u00e9", "x\udcff", "a b"]), rng.choice(["a", "\n", "0"]),
                      *(rng.choice(numbers) for _ in range(rng.randint(1, 9)))]) for _ in range(700)]
    return FORMS + anything + near


def outcomes(name: str) -> list[str]:
    """What each public name parser gives for `name`: the repr of its result or its error's type and text."""
    from dumpcmp.dumps import naming

    def run(parse, *args) -> str:
        try:
            return repr(parse(name, *args))
        except Exception as error:  # the error type is part of the behaviour kept
            return f"{type(error).__name__}: {error}"

    found = [run(naming.parse_name), run(naming.classify), run(naming.parse_device_dump_name),
             *(run(naming.parse_framework_dump_name, ext) for ext in FRAMEWORK_EXTENSIONS),
             run(naming.parse_converted_name)]
    # the file's name in an error text stands as {name}, so that the data keeps each text once
    return [text.replace(repr(name.rpartition("/")[2]), "{name}") for text in found]


def capture() -> dict:
    texts: dict[str, int] = {}
    rows = [[texts.setdefault(text, len(texts)) for text in outcomes(name)] for name in names()]
    return {"names": names(), "texts": list(texts), "outcomes": rows}


DATA = Path(__file__).parent / "data" / "naming_main.json"


def test_the_names_are_those_captured():
    assert json.loads(DATA.read_text(encoding="utf-8"))["names"] == names()


@pytest.mark.parametrize("chunk", range(10))
def test_every_parser_gives_what_main_gave(chunk):
    data = json.loads(DATA.read_text(encoding="utf-8"))
    for name, expected in list(zip(data["names"], data["outcomes"]))[chunk::10]:
        assert outcomes(name) == [data["texts"][i] for i in expected], name


if __name__ == "__main__":
    json.dump(capture(), sys.stdout, ensure_ascii=True, separators=(",", ":"))
