"""jsonfile.load works on the file's bytes as read (issue #35: no second UTF-8 copy of a 200 MB graph): what it
gives and refuses is what `loads` of the decoded text gives and refuses."""

from __future__ import annotations

import json

import pytest

from dumpcmp.errors import ConfigError
from dumpcmp.support import jsonfile

CASES = [
    '{"a": [1, 2, {"b": "x"}]}',
    '{"big": 12345678901234567890123, "small": 1}',  # past 64 bits: the standard library's exact integer
    '{"s": "[[[[ \\\\\\" {{{{ \\\\\\\\", "t": [[["]"]]]}',  # brackets and escapes inside strings
    '{"u": "caf\\u00e9 \\ud83d\\ude00 \u00e9"}',
    '[' * 256 + ']' * 256,
    '[' * 257 + ']' * 257,
    '{"lone": "\\udcff"}',
    '{"x": NaN}',
    '{"x": 1,}',
    '[' * 300,  # deep and not JSON: not a JSON file, as before the scan came first
    '{"a": ' * 300 + '1' + '}' * 299,
]


@pytest.mark.parametrize("bom", [b"", jsonfile.BOM])
@pytest.mark.parametrize("text", CASES)
def test_load_of_the_bytes_is_loads_of_the_text(tmp_path, text, bom):
    path = tmp_path / "g.json"
    path.write_bytes(bom + text.encode("utf-8"))

    def outcome(read):
        try:
            return "value", json.dumps(read(), sort_keys=True)
        except ConfigError as error:
            return "error", str(error).replace(str(path), "P")

    assert outcome(lambda: jsonfile.load(path)) == outcome(lambda: jsonfile.loads(text, str(path)))


def test_bytes_depth_is_text_depth():
    for text in CASES:
        assert jsonfile.bytes_depth(text.encode("utf-8", "surrogatepass")) == jsonfile.text_depth(text)
