"""The original tool's `compare -r start,end,step` and `-s i,j,k`: only the fusion ops holding the chosen graph ops
(by their `id` in the graph JSON, the original's "op sequence"), with an OpSequence column after Index.

`-r`: the ops whose id is `start`, `end`, or `start + k * step` between them (`end` -1: the last op's id; an empty
part keeps its default 1, -1, 1); `-s`: the ops whose ids are listed (ids past the last op are left out with a
warning, none left is an error). A chosen op brings its whole fusion op (every row of its Index).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from dumpcmp.comparison.rows import ComparisonResult, graph_group_name
from dumpcmp.errors import ConfigError

__all__ = ["OpRange", "select_ops"]

_NUMBER = re.compile(r"^[0-9]+$")


@dataclasses.dataclass
class OpRange:
    """`-r` (range=(start, end, step)) or `-s` (select=ids)."""

    range: tuple[int, int, int] | None = None
    select: tuple[int, ...] | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def parse_range(cls, text: str) -> OpRange:
        parts = text.split(",")
        if len(parts) != 3:
            raise ConfigError(f'-r: the range ({text}) is invalid, just supports "start,end,step".')
        values = [1, -1, 1]
        for i, part in enumerate(p.strip() for p in parts):
            if not part or (i == 1 and part == "-1"):
                continue
            if not _NUMBER.match(part):
                raise ConfigError(f'-r: the range ({text}) is invalid, just supports "start,end,step", the value is '
                                  f'number.')
            values[i] = int(part)
        return cls(range=(values[0], values[1], values[2]))

    @classmethod
    def parse_select(cls, text: str) -> OpRange:
        ids = set()
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            if not _NUMBER.match(part):
                raise ConfigError(f'-s: the index ({text}) is invalid, just supports "index_1, index_2, ...", the '
                                  f'value is zero or a positive number.')
            ids.add(int(part))
        return cls(select=tuple(sorted(ids)))

    def chosen(self, ids: list[int]) -> set[int]:
        """The chosen op ids among the graph's (in the graph's order); ConfigError when out of range."""
        count = ids[-1] if ids else 0
        if self.range is not None:
            start, end, step = self.range
            if start < 1 or start > count:
                raise ConfigError(f"-r: start {start} is out of range [1, {count}]")
            end = count if end == -1 else end
            if end < start or end > count:
                raise ConfigError(f"-r: end {end} is out of range [1, {count}]")
            if step < 1 or step >= count:
                raise ConfigError(f"-r: step {step} is out of range [1, {count})")
            out = set()
            for i in ids:
                if i > end:
                    break
                if i >= start and (i in (start, end) or (i - start) % step == 0):
                    out.add(i)
            return out
        assert self.select is not None
        inside = [i for i in self.select if i <= count]
        if len(inside) != len(self.select):
            message = f"-s: index {[i for i in self.select if i > count]} out of range [1,{count}]."
            if not inside:
                raise ConfigError(message)
            self.warnings.append(message)
        return set(inside)


def select_ops(result: ComparisonResult, op_range: OpRange) -> ComparisonResult:
    """The result's rows of the chosen fusion ops, with their OpSequence; needs the graph JSON."""
    graph = result.graph
    if graph is None:
        raise ConfigError('-r/-s take effect only with the graph JSON (-f)')
    ops = sorted(graph.ops, key=lambda o: o.id)
    chosen = op_range.chosen([o.id for o in ops])
    groups = {graph_group_name(o) for o in ops if o.id in chosen}
    op_id = {o.name: o.id for o in ops}
    keep, sequence = [], {}
    for r in result.rows:
        name: Any = r.graph_op if r.graph_op is not None else (r.pair.graph_op if r.pair is not None else None)
        op = graph.get(name) if name is not None else None
        if op is not None and graph_group_name(op) in groups:
            keep.append(r)
            sequence[id(r)] = op_id[op.name]
    return dataclasses.replace(result, rows=keep, op_sequence=sequence)
