"""Records made without `__init__` (support/records.frozen_record) take the memory `__init__`'s take (issue #35:
10^6 pairing rows and graph descs): their fields share the class's table of keys instead of each holding a copy."""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields

from dumpcmp.support.records import frozen_record


@dataclass(frozen=True)
class _Record:
    a: str
    b: int
    c: tuple[int, ...] | None = None
    d: str | None = None
    e: object = None
    f: object = None
    g: object = None
    h: object = None


def test_a_record_holds_its_fields_in_as_little_memory_as_one_made_by_init():
    values = {"a": "x", "b": 1, "c": (1, 2), "d": None, "e": None, "f": 3.5, "g": "y", "h": None}
    made = [_Record(**values) for _ in range(3)]
    fast = [frozen_record(_Record, dict(values)) for _ in range(3)]
    assert fast[0] == made[0] and [f.name for f in fields(_Record)] == list(vars(fast[0]))
    assert sys.getsizeof(vars(fast[1])) == sys.getsizeof(vars(made[1]))
