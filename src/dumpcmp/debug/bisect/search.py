"""Automatic bisection for networks whose full dump does not fit on disk or takes too long: the ONNX model, the
user's own device run command (with placeholders for the model, the acl.json and the dump folder) and the ground
truth flow in; each round writes an acl.json that dumps only the layers it needs, runs the command, compares those
layers with the ground truth and halves the suspect range, so the first layer below the threshold is found in
about ⌈log2 n⌉ + 1 device runs for n layers. Out come `OUT/round_NN/` folders (acl.json, dump, run.log, result.csv),
`OUT/bisect.log` (every round, as printed) and `OUT/bisect.jsonl` (the state an interrupted bisect resumes from),
and a `BisectResult`. The layer found, `dumpcmp locate` replays it on its own device inputs (one more run, dumping
its inputs too, in `OUT/locate/`): is the error born there or did it arrive? A failing command stops the bisect with
`RunFailed` (its exit code and output).

The search assumes that a layer's error persists downstream (what a precision loss does): the last layer is
checked first (above the threshold: no layer below it), then the range between the last layer known above and the
first known below is halved. Layers are the compiled ops of the graph JSON (`-f`, or the one the first run writes)
whose output has ground truth, in execution order; compiler-inserted ops are left out, and so are the ops whose
cosine cannot show an error they receive (`blind_layers`: an Add of a constant offsets it away, Clip, Relu6 and
HardSigmoid saturate, shape ops compute integers; a hardswish `x * Clip(x + 3, 0, 6) / 6` keeps its Add and Clip
near cosine 1 between two bad tensors). The layer found is confirmed: it is below and the layers writing its inputs
are above (one more run when they were not measured yet). When a producer is below too, the error did not persist
downstream between it and the last layer found above: that is said, and the search goes on before the producer.
When the producers are above but carry an error (`CARRY_FRACTION`), it arrived from upstream, diluted on the way
(a residual Add): the confirmation follows it back (at most `UPSTREAM_RUNS` runs) and searches on before the layer
below the threshold it finds there.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from dumpcmp.errors import ConfigError, DumpcmpError
from dumpcmp.graph.pairing import DEQUANTIZE_TYPES, PASS_THROUGH_TYPES, QUANTIZE_TYPES

__all__ = ["PLACEHOLDERS", "BisectJob", "BisectResult", "Round", "RunFailed", "bisect", "blind_layers",
           "candidate_layers"]

PLACEHOLDERS = ("model", "acl_json", "dump", "graph_json", "round")
STATE = "bisect.jsonl"
#: what locate's replay walks back through from a layer to the ops writing its float inputs: the graph's quantize,
#: dequantize and pass-through types (one definition, dumpcmp.graph.pairing)
_WALK_BACK_TYPES = QUANTIZE_TYPES | DEQUANTIZE_TYPES | PASS_THROUGH_TYPES
LOG = "bisect.log"
#: an input above the threshold with this share of the error the threshold allows carries an error from upstream
CARRY_FRACTION = 0.25
#: device runs the confirmation takes at most to follow a carried error upstream
UPSTREAM_RUNS = 3
MARKER = ".dumpcmp-bisect"
#: ONNX ops whose output cosine cannot show an error in their input: they saturate, or compute shapes and masks
_SATURATING = frozenset({"Clip", "HardSigmoid", "Relu6"})
_SHAPES = frozenset({"Shape", "Size", "ConstantOfShape", "Range", "NonZero", "Equal", "Less", "Greater",
                     "LessOrEqual", "GreaterOrEqual", "And", "Or", "Not", "Xor", "IsNaN", "IsInf", "ArgMax", "ArgMin"})
#: the device types of those ops, for compiled ops the ONNX model does not name
_BLIND_DEVICE_TYPES = frozenset({"ClipByValue", "Relu6", "HardSigmoid", "Shape", "Size", "Range", "Equal", "Less",
                                 "Greater", "ArgMaxV2", "ArgMinV2"})


class RunFailed(Exception):
    """The user's device command failed: its exit code and output."""

    def __init__(self, command: str, returncode: int, output: str, folder: Path) -> None:
        super().__init__(f"the device run failed with exit code {returncode}: {command}")
        self.command, self.returncode, self.output, self.folder = command, returncode, output, folder


@dataclass
class Round:
    """One device run: the layers it dumped, their cosine similarity, and the suspect range after it."""

    number: int
    layers: list[str]
    cosine: dict[str, float]
    below: dict[str, bool]
    lo: int
    """Index of the last layer known above the threshold (-1: none)."""
    hi: int | None
    """Index of the first layer known below (None: not known yet)."""
    seconds: float
    folder: str
    confirm: bool = False
    """A confirmation round (the layer found and the layers writing its inputs) that confirmed the layer."""


@dataclass
class BisectResult:
    layer: str | None
    """The first layer below the threshold (a compiled op name); None when none is."""
    originals: list[str]
    cosine: float | None
    previous: str | None
    """The layer just before it, known above the threshold."""
    candidates: list[str]
    rounds: list[Round]
    resumed: int
    threshold: float
    log: Path
    folder: Path | None
    """The round folder whose dump holds the layer's output."""
    notes: list[str] = field(default_factory=list)
    graph_json: Path | None = None
    """The graph JSON the rounds were compared with."""
    locate: str | None = None
    """What `dumpcmp locate` says about the layer, replayed on its own device inputs (None: not run)."""
    dump_runs: list[str] = field(default_factory=list)
    """The runs (iterations, devices, ...) each round's dump held and the search compared: a layer is below the
    threshold when it is in any of them."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Layers not tested because their cosine cannot show an error (`blind_layers`): name -> why."""
    confirmation: str | None = None
    """How the layer was confirmed: below, the layers writing its inputs above."""

    @property
    def runs(self) -> int:
        """Device runs of the search (the locate run not counted)."""
        return len(self.rounds)


def candidate_layers(graph: Any, gt: Any) -> list[str]:
    """The compiled ops (in execution order) whose output 0 has ground truth: what the bisect can test."""
    from dumpcmp.graph.device_ops import device_ops
    from dumpcmp.graph.pairing import Relation, pair_with_ground_truth

    from dumpcmp.dumps.ground_truth import keys_by_index

    pairs = pair_with_ground_truth(device_ops(graph), keys_by_index(gt.files), graph)
    names = [p.npu_op for p in pairs if p.kind == "output" and p.index == 0 and p.ground_truth_ref is not None
             and p.skip_reason is None and p.relation is not Relation.INSERTED and p.npu_op is not None]
    return list(dict.fromkeys(names))


def _blind_reason(node: Any, constants: frozenset[str]) -> str | None:
    t = node.op_type
    if t in _SATURATING:
        return f"{t} saturates"
    if t in _SHAPES:
        return f"{t} computes shapes or masks"
    if t in ("Add", "Sub") and any(x in constants for x in node.input if x):
        return f"{t} of a constant offsets"
    return None


def blind_layers(graph: Any, model: Any, layers: Sequence[str]) -> dict[str, str]:
    """The layers (compiled ops) whose output cosine cannot show an error they receive, with why: every original
    ONNX node the op stands for is an Add or Sub of a constant (the offset dominates: x + 3 keeps cosine ~1 however
    wrong x is), a saturating op (Clip, Relu6, HardSigmoid) or a shape/mask op; by the device type when the ONNX
    model does not name the op. `model`: a `dumpcmp.debug.region.OriginalModel`."""
    from dumpcmp.dumps.naming import sanitize

    by_name = dict(model.nodes)
    by_sanitized = {sanitize(k): v for k, v in model.nodes.items()}
    constants = frozenset(model.constants) | frozenset(model.initializers)
    found: dict[str, str] = {}
    for name in layers:
        op = graph.get(name)
        if op is None:
            continue
        nodes = [by_name.get(x) or by_sanitized.get(sanitize(x)) for x in graph.original_names(op)]
        if nodes and all(n is not None for n in nodes):
            reasons = [_blind_reason(n, constants) for n in nodes]
            if all(reasons):
                found[name] = "; ".join(dict.fromkeys(r for r in reasons if r))
        elif op.type in _BLIND_DEVICE_TYPES:
            found[name] = f"{op.type} saturates or computes shapes"
    return found


def _last_index(graph: Any, candidates: Sequence[str], last: str) -> int:
    """The index of the candidate that is (or was compiled from) layer `last`."""
    from dumpcmp.dumps.naming import sanitize

    for i, name in enumerate(candidates):
        op = graph.get(name)
        names = [name] + (list(graph.original_names(op)) if op is not None else [])
        if last in names or sanitize(last) in map(sanitize, names):
            return i
    import difflib

    close = difflib.get_close_matches(last, candidates, n=5, cutoff=0.5)
    raise ConfigError(f"--last {last!r}: no layer the bisect can test is named so or compiled from it"
                      + (f"; closest: {', '.join(close)}" if close else ""))


def _walk_back(graph: Any, op: Any, through: Callable[[Any], bool]) -> list[Any]:
    """The ops (not graph inputs or constants) writing `op`'s inputs, and back through each for which `through`
    holds to the ops writing its inputs, and so on."""
    from dumpcmp.graph.device_ops import NOT_RUN_DEVICE_TYPES

    reached: list[Any] = []
    stack, seen = [op], {op.name}
    while stack:
        for found in graph.producers(stack.pop()):
            if found is None or found[0].type in NOT_RUN_DEVICE_TYPES or found[0].name in seen:
                continue
            seen.add(found[0].name)
            reached.append(found[0])
            if through(found[0]):
                stack.append(found[0])
    return reached


def _substitute(command: str, values: dict[str, str]) -> str:
    """`command` with each {placeholder} replaced by its shell-quoted value, in one pass over the template: text
    a value brings in (a `{dump}` inside --device-model, a `;` in -o) is never substituted again nor run."""
    pattern = re.compile("{(" + "|".join(map(re.escape, values)) + ")}")
    return pattern.sub(lambda m: shlex.quote(values[m.group(1)]), command)


class BisectJob:
    """One bisect: its state file and log, one device run a round, the search and the locate run after it."""

    def __init__(self, model: Path, command: str, ground_truth: Path, out: Path, *, graph_json: Path | None,
                 device_model: Path, model_name: str, threshold: float, per_round: int,
                 echo: Callable[[str], None], timeout: float | None, with_locate: bool, last: str | None,
                 selection: dict[str, Any] | None = None, gt_sample: int | dict[int, int] | None = None) -> None:
        from dumpcmp.dumps.scan import scan_ground_truth

        self.model, self.command, self.ground_truth, self.out = model, command, ground_truth, out
        self.graph_json, self.device_model, self.model_name = graph_json, device_model, model_name
        self.threshold, self.per_round, self.echo, self.timeout = threshold, per_round, echo, timeout
        self.gt = scan_ground_truth(ground_truth)
        if len(self.gt) == 0:
            raise ConfigError(f"{ground_truth}: no ground-truth files ({{op}}.{{index}}.{{timestamp}}.npy)")
        self.header: dict[str, Any] = {"model": os.fspath(model.absolute()),
                                       "ground_truth": os.fspath(ground_truth.absolute()),
                                       "threshold": threshold, "command": command, "last": last, "candidates": None}
        self.selection = {k: v for k, v in (selection or {}).items() if v is not None}
        self.gt_sample = gt_sample
        # the runs compared and their ground-truth samples: a resumed bisect must compare the same (JSON's keys)
        chosen = dict(self.selection, **({"gt_sample": gt_sample} if gt_sample is not None else {}))
        if chosen:
            self.header["selection"] = json.loads(json.dumps(chosen))
        self.dump_runs: list[str] = []
        self.rounds: list[Round] = []
        self.lines: list[str] = []
        self.notes: list[str] = []
        self.with_locate = with_locate
        self.last = last
        self.last_graph: Path | None = None

    # -- state -----------------------------------------------------------------------------------------------------
    def load(self) -> int:
        path = self.out / STATE
        if not path.exists():
            return 0
        try:
            records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            header = records[0]
            rounds = [Round(**r) for r in records[1:]]
        except (ValueError, TypeError, IndexError, KeyError) as error:
            raise ConfigError(f"{path}: not a bisect state file ({error}); choose another -o") from error
        for key in ("model", "ground_truth", "threshold", "last", "selection"):
            if header.get(key) != self.header.get(key):
                raise ConfigError(f"{self.out}: holds a bisect with another {key} ({header.get(key)!r}, not "
                                  f"{self.header.get(key)!r}); choose another -o to start a new one")
        if header.get("command") != self.command:
            self.notes.append("the command differs from the one the earlier rounds ran; resuming with the new one")
        self.header["candidates"] = header.get("candidates")
        if "locate" in header:
            self.header["locate"] = header["locate"]
        self.rounds = rounds
        log = self.out / LOG
        self.lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return len(rounds)

    def save(self) -> None:
        from dumpcmp.support.files import atomic_write_text

        records = [self.header] + [asdict(r) for r in self.rounds]
        atomic_write_text(self.out / STATE, "".join(json.dumps(r) + "\n" for r in records))
        atomic_write_text(self.out / LOG, "".join(line + "\n" for line in self.lines))

    def say(self, text: str) -> None:
        self.echo(text)
        self.lines.append(f"{time.strftime('%Y-%m-%d %H:%M:%S')}  {text}")

    # -- one device run --------------------------------------------------------------------------------------------
    def _graph_path(self, folder: Path, dump: Path) -> Path:
        if self.graph_json is not None:
            return self.graph_json
        if (folder / "model.json").is_file():
            return folder / "model.json"
        found = sorted(dump.glob("*.json"))
        if len(found) == 1:
            return found[0]
        raise ConfigError(f"round folder {folder}: no graph JSON; give -f GRAPH.json (atc --mode=1 --json) or let "
                          "the command write {graph_json}")

    def run(self, number: int, layers: Sequence[str], mode: str = "output",
            name: str | None = None) -> tuple[dict[str, float], dict[str, bool], Path]:
        from dumpcmp.support.files import atomic_write_text
        from dumpcmp.device.acljson import acl_json_text, new_acl_json
        from dumpcmp.comparison.compare import compare_runs
        from dumpcmp.graph.graph_json import load_graph
        from dumpcmp.dumps.naming import sanitize

        folder = self.out / (name or f"round_{number:02d}")
        if folder.exists():  # an interrupted round of this bisect: its own folder, redone from scratch
            if not (folder / MARKER).exists():
                raise ConfigError(f"{folder}: exists and was not written by dumpcmp bisect; choose another -o")
            shutil.rmtree(folder)
        dump = folder / "dump"
        dump.mkdir(parents=True)
        atomic_write_text(folder / MARKER, "")
        config = new_acl_json([(self.model_name, list(layers))], dump_path=os.fspath(dump.absolute()),
                              dump_mode=mode)
        acl = atomic_write_text(folder / "acl.json", acl_json_text(config))
        command = _substitute(self.command, {
            "model": os.fspath(self.device_model), "acl_json": os.fspath(acl.absolute()),
            "dump": os.fspath(dump.absolute()), "graph_json": os.fspath((folder / "model.json").absolute()),
            "round": str(number)})
        try:
            done = subprocess.run(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired as expired:
            output = (expired.output or b"").decode("utf-8", "replace")
            atomic_write_text(folder / "run.log", f"$ {command}\n{output}killed after {self.timeout} s\n")
            raise RunFailed(command, 124, output + f"(killed after --timeout {self.timeout} s)\n", folder) from None
        output = done.stdout.decode("utf-8", "replace")
        atomic_write_text(folder / "run.log", f"$ {command}\n{output}exit code {done.returncode}\n")
        if done.returncode != 0:
            raise RunFailed(command, done.returncode, output, folder)
        graph_path = self._graph_path(folder, dump)
        if self.header["candidates"] is None:
            graph = load_graph(graph_path)
            cands = candidate_layers(graph, self.gt)
            if not cands:
                raise ConfigError(f"{graph_path}: no compiled op has ground truth in {self.ground_truth}")
            cands = cands[:_last_index(graph, cands, self.last) + 1] if self.last else cands
            from dumpcmp.debug.region import OriginalModel

            blind = blind_layers(graph, OriginalModel.load(self.model), cands)
            probes = [x for x in cands if x not in blind]
            self.header["candidates"] = probes or cands
            self.header["left_out"] = blind if probes else {}
            if blind and probes:
                kinds = ", ".join(sorted(set(blind.values())))
                self.say(f"{len(blind)} of {len(cands)} layers are not tested: their cosine cannot show an error "
                         f"they receive ({kinds})")
        self.last_graph = graph_path
        if name is not None:
            return {}, {}, folder
        try:
            results = compare_runs(dump, self.ground_truth, fusion_json=graph_path, quiet=True,
                                   gt_sample=self.gt_sample, **self.selection)
        except DumpcmpError as error:
            raise ConfigError(f"round {number}: {error} (does the command pass {{acl_json}} or {{dump}} to the "
                              "device run?)") from error
        cosine: dict[str, float] = {}
        below: dict[str, bool] = {}
        self.dump_runs = [result.run for result in results]
        wanted = {sanitize(x): x for x in layers}
        for result in results:
            for row in result.rows:
                pair = row.pair
                if pair is None or pair.kind != "output" or row.result is None or pair.npu_op is None:
                    continue
                name = wanted.get(sanitize(pair.graph_op or pair.npu_op))
                if name is None:
                    continue
                c = row.cosine
                bad = c < self.threshold or (math.isnan(c) and (row.overflow or row.dead))
                cosine[name] = min(cosine.get(name, math.inf), c) if not math.isnan(c) else c
                below[name] = below.get(name, False) or bad
        for i, result in enumerate(results):
            result.write(folder / (f"result_{i}.csv" if len(results) > 1 else "result.csv"), force=True)
        return cosine, below, folder

    # -- the search ------------------------------------------------------------------------------------------------
    def points(self, lo: int, hi: int) -> list[int]:
        span = hi - lo
        k = min(self.per_round, span - 1)
        return sorted({lo + (span * j) // (k + 1) for j in range(1, k + 1)} - {lo, hi})

    def search(self) -> BisectResult:
        resumed = self.load()
        lo, hi = -1, None
        confirmed = False
        for r in self.rounds:
            lo, hi, confirmed = r.lo, r.hi, r.confirm
        if resumed:
            self.say(f"resuming after round {resumed} (suspects: {self._range(lo, hi)})")
        for note in self.notes:
            self.say(f"note: {note}")
        while True:
            cands = self.header["candidates"]
            if cands is not None and hi is not None and hi - lo <= 1:
                if hi >= len(cands) or confirmed:
                    break
                lo, hi, confirmed = self.confirm(lo, hi)
                continue
            if cands is None:
                layers = self.output_layers()
            elif hi is None:
                layers = [cands[-1]]
            else:
                layers = [cands[i] for i in self.points(lo, hi)]
            number = len(self.rounds) + 1
            start = time.perf_counter()
            cosine, below, folder = self.run(number, layers)
            cands = self.header["candidates"]
            tested = [(cands.index(x), x) for x in layers if x in cands]
            missing = [x for _, x in tested if x not in cosine]
            if missing:
                raise ConfigError(f"round {number}: the device run wrote no comparable output of "
                                  f"{', '.join(missing)} (see {folder}/run.log and result.csv); does the command "
                                  "pass {acl_json} to the device run?")
            if hi is None:
                last = len(cands) - 1
                if cands[-1] in cosine:
                    if not below[cands[-1]]:
                        lo = last
                    hi = last
                tested = [(i, x) for i, x in tested if i < last or hi is not None]
            first_bad = next(((i, x) for i, x in sorted(tested) if below.get(x)), None)
            if first_bad is not None and hi is not None:
                hi = min(hi, first_bad[0])
                later = [x for i, x in tested if i > first_bad[0] and not below.get(x)]
                if later:
                    self.say(f"note: {', '.join(later)} above after {first_bad[1]} below: the error does not persist "
                             "downstream there (what bisect assumes); the first layer below is searched")
            lo = max([lo] + [i for i, x in tested if not below.get(x) and (hi is None or i < hi)])
            if lo == len(cands) - 1:
                hi = lo + 1  # the last layer is above: nothing below
            seconds = time.perf_counter() - start
            self.rounds.append(Round(number, list(layers), cosine, below, lo, hi, round(seconds, 3),
                                     os.fspath(folder)))
            shown = ", ".join(f"{x} {cosine[x]:.6f} ({'below' if below[x] else 'above'})" for x in layers
                              if x in cosine)
            self.say(f"round {number}: dumped {len(layers)} layer{'s' * (len(layers) != 1)}: {shown}; "
                     f"suspects: {self._range(lo, hi)} ({seconds:.1f} s)")
            self.save()
        return self.result(resumed)

    def producer_layers(self, layer: str) -> list[str]:
        """The tested layers writing `layer`'s inputs: back from it through the ops that are not tested (inserted,
        quantize, and those whose cosine cannot show an error) to the first tested ones."""
        from dumpcmp.graph.graph_json import load_graph

        graph = load_graph(self._graph_for(self.rounds[-1]))
        cands = set(self.header["candidates"])
        op = graph.get(layer)
        if op is None:
            return []
        found = [x.name for x in _walk_back(graph, op, lambda x: x.name not in cands) if x.name in cands]
        order = {name: i for i, name in enumerate(self.header["candidates"])}
        return sorted(found, key=order.__getitem__)

    def confirm(self, lo: int, hi: int) -> tuple[int, int, bool]:
        """The layer found must be below and the layers writing its inputs above: measured in one more run when
        they were not yet. A producer below means the error did not persist downstream between it and the last
        layer found above: said, and the search goes on before that producer. Returns (lo, hi, confirmed)."""
        cands = self.header["candidates"]
        layer = cands[hi]
        producers = self.producer_layers(layer)
        known: dict[str, tuple[float, bool]] = {}
        for r in self.rounds:
            known.update({x: (r.cosine[x], r.below[x]) for x in r.layers if x in r.cosine})
        untested = [p for p in producers if p not in known]
        round_note = "measured in earlier rounds"
        if untested:
            number = len(self.rounds) + 1
            start = time.perf_counter()
            cosine, below, folder = self.run(number, [layer] + untested)
            missing = [x for x in [layer] + untested if x not in cosine]
            if missing:
                raise ConfigError(f"round {number}: the device run wrote no comparable output of "
                                  f"{', '.join(missing)} (see {folder}/run.log and result.csv)")
            known.update({x: (cosine[x], below[x]) for x in cosine})
            round_note = f"round {number}"
        bad = [p for p in producers if known[p][1]]
        shown = ", ".join(f"{p} {known[p][0]:.6f}" for p in producers)
        if bad:
            p = bad[0]
            new_hi = cands.index(p)
            above = [cands.index(x) for x, (_, b) in known.items() if not b and x in cands]
            new_lo = max([-1] + [i for i in above if i < new_hi])
            confirmed = False
            later = cands[lo] if lo >= 0 else "no layer"
            self.say(f"not confirmed ({round_note}): {layer} is below, but so is {p}, which writes its input "
                     f"({known[p][0]:.6f}), while {later}, after it in execution order, is "
                     f"above: the error does not persist downstream there (what bisect assumes); searching up to {p}")
        else:
            new_lo, new_hi, confirmed = lo, hi, True
            self.header["confirmation"] = (f"confirmed ({round_note}): {layer} is below ({known[layer][0]:.6f}) and "
                                           + (f"the layers writing its inputs are above: {shown}" if producers
                                              else "it reads no tested layer"))
        if untested:
            self.rounds.append(Round(number, [layer] + untested, {x: known[x][0] for x in [layer] + untested},
                                     {x: known[x][1] for x in [layer] + untested}, lo if confirmed else new_lo,
                                     hi if confirmed else new_hi, round(time.perf_counter() - start, 3),
                                     os.fspath(folder), False))
        if confirmed:
            self.say(self.header["confirmation"])
            carriers = [p for p in producers if self.carries(known[p][0])]
            if carriers:
                self.say(f"note: {', '.join(carriers)} above, but with cosine below "
                         f"{1 - (1 - self.threshold) * CARRY_FRACTION:.6f}: an error arrives from upstream; "
                         f"following it back (at most {UPSTREAM_RUNS} runs)")
            found = self.upstream(layer, carriers, known)
            if found is not None:
                p, ancestor = found
                new_hi = cands.index(ancestor)
                above = [cands.index(x) for x, (_, b) in known.items() if not b and x in cands]
                new_lo = max([-1] + [i for i in above if i < new_hi])
                confirmed = False
                self.header.pop("confirmation", None)
                self.say(f"not confirmed: {layer} is below and the layers writing its inputs are above, but "
                         f"{p} ({known[p][0]:.6f}) carries an error from upstream: {ancestor}, which feeds it, is "
                         f"below ({known[ancestor][0]:.6f}); the error was diluted on the way (a join with a sound "
                         f"branch, such as a residual Add), so it does not persist downstream there (what bisect "
                         f"assumes); searching up to {ancestor}")
            if self.rounds and self.rounds[-1].lo == lo and self.rounds[-1].hi == hi and not self.rounds[-1].confirm:
                last = self.rounds[-1]  # the round that measured the last layers: the range it leaves
                last.lo, last.hi, last.confirm = new_lo, new_hi, confirmed
        self.save()
        return new_lo, new_hi, confirmed

    def carries(self, cosine: float) -> bool:
        """Above the threshold, but with a quarter of the error the threshold allows or more: an error arrived."""
        return (1 - cosine) >= (1 - self.threshold) * CARRY_FRACTION

    def upstream(self, layer: str, frontier: list[str], known: dict[str, tuple[float, bool]]) -> \
            tuple[str, str] | None:
        """Back from the inputs of `layer` that carry an error (above the threshold, but far from a sound layer's
        cosine) through the layers that write them, one device run a step (at most UPSTREAM_RUNS), while the error
        is still carried: (the input, the earlier layer below it) when one is below (the error was diluted on its
        way, by a residual Add), else None. The runs are rounds of their own (a resumed bisect reads them)."""
        via = {p: p for p in frontier}
        for _ in range(UPSTREAM_RUNS):
            step: dict[str, str] = {}
            for p in frontier:
                for q in self.producer_layers(p):
                    step.setdefault(q, via[p])
            untested = [q for q in step if q not in known]
            if untested:
                number = len(self.rounds) + 1
                start = time.perf_counter()
                cosine, below, folder = self.run(number, untested)
                known.update({x: (cosine[x], below[x]) for x in cosine})
                last = self.rounds[-1] if self.rounds else None
                self.rounds.append(Round(number, untested, dict(cosine), dict(below),
                                         last.lo if last else -1, last.hi if last else None,
                                         round(time.perf_counter() - start, 3), os.fspath(folder)))
                self.say(f"round {number}: the inputs of {layer} carry an error: dumped the layers writing them: "
                         + ", ".join(f"{x} {cosine[x]:.6f}" for x in untested if x in cosine))
            measured = [q for q in step if q in known]
            order = {name: i for i, name in enumerate(self.header["candidates"])}
            bad = sorted((q for q in measured if known[q][1]), key=order.__getitem__)
            if bad:
                return step[bad[0]], bad[0]
            frontier = [q for q in measured if self.carries(known[q][0])]
            via = {q: step[q] for q in frontier}
            if not frontier:
                return None
        return None

    def output_layers(self) -> list[str]:
        """Before any graph JSON is known: the layers writing the model's outputs, by their ONNX names."""
        from dumpcmp.debug.region import OriginalModel

        om = OriginalModel.load(self.model)
        outs = [o.name for o in om.model.graph.output]
        return list(dict.fromkeys(om.producer[o] for o in outs if o in om.producer))

    def _range(self, lo: int, hi: int | None) -> str:
        cands = self.header["candidates"]
        if cands is None:
            return "unknown yet"
        if hi is not None and hi >= len(cands):
            return "none"
        end = len(cands) - 1 if hi is None else hi
        count = end - lo
        return f"{cands[lo + 1]} .. {cands[end]} ({count} layer{'s' * (count != 1)})"

    def result(self, resumed: int) -> BisectResult:
        cands = self.header["candidates"]
        lo, hi = self.rounds[-1].lo, self.rounds[-1].hi
        log = self.out / LOG
        if hi is None or hi >= len(cands):
            last = cands[-1]
            c = next((r.cosine[last] for r in reversed(self.rounds) if last in r.cosine), None)
            self.say(f"no layer below the threshold {self.threshold}: the last layer {last} has cosine "
                     f"{c:.6f} (bisect assumes a layer's error persists downstream); {len(self.rounds)} device "
                     f"run{'s' * (len(self.rounds) != 1)}")
            self.save()
            return BisectResult(None, [], c, last, cands, self.rounds, resumed, self.threshold, log, None,
                                self.notes, self._graph_for(self.rounds[-1]), dump_runs=self.dump_runs)
        layer = cands[hi]
        where = next(r for r in reversed(self.rounds) if layer in r.cosine)
        previous = cands[lo] if lo >= 0 else None
        originals: list[str] = []
        try:
            from dumpcmp.graph.graph_json import load_graph

            graph = load_graph(self._graph_for(where))
            op = graph.get(layer)
            originals = list(graph.original_names(op)) if op is not None else []
        except DumpcmpError:
            pass
        before = "it is the first layer" if previous is None else f"the layer before it, {previous}, is above"
        bound = math.ceil(math.log2(max(len(cands), 2))) + 1
        self.say(f"first layer below the threshold {self.threshold}: {layer} ({', '.join(originals) or 'no original'})"
                 f", cosine {where.cosine[layer]:.6f}; {before}. {len(self.rounds)} device runs for {len(cands)} "
                 f"layers (⌈log2 n⌉ + 1 = {bound})")
        self.save()
        statement = self.locate(layer, previous) if self.with_locate else None
        return BisectResult(layer, originals, where.cosine[layer], previous, cands, self.rounds, resumed,
                            self.threshold, log, Path(where.folder), self.notes, self._graph_for(where), statement,
                            self.dump_runs, self.header.get("left_out") or {}, self.header.get("confirmation"))

    def _graph_for(self, r: Round) -> Path:
        self.last_graph = self._graph_path(Path(r.folder), Path(r.folder) / "dump")
        return self.last_graph

    def around(self, layer: str, previous: str | None) -> list[str]:
        """The compiled ops from the last layer above the threshold to `layer`, both included (inserted Cast,
        TransData and quantize ops between them too), and back from `layer` through quantize, dequantize and
        inserted ops to the ops writing its float inputs: what locate replays."""
        from dumpcmp.graph.device_ops import NOT_RUN_DEVICE_TYPES
        from dumpcmp.graph.graph_json import load_graph

        graph = load_graph(self.last_graph)
        end = graph.get(layer)
        start = graph.get(previous) if previous is not None else None
        if end is None:
            return [layer]
        first = start.position if start is not None else end.position
        chosen = {op.name for op in graph.ops if first <= op.position <= end.position
                  and op.type not in NOT_RUN_DEVICE_TYPES}
        # back from the layer through quantize/dequantize and inserted ops to the ops writing its float inputs:
        # locate replays a device int8 unit (quantize -> integer op -> dequantize) fed its float input
        chosen |= {x.name for x in _walk_back(graph, end, lambda x: x.type in _WALK_BACK_TYPES)}
        return [op.name for op in graph.ops if op.name in chosen]

    def locate(self, layer: str, previous: str | None) -> str:
        """One more device run dumping the inputs and outputs (dump_mode all) of the ops from the last layer above
        the threshold to `layer`, replayed by `dumpcmp locate` on their own device inputs: is the error born in
        the layer, or did it arrive?"""
        if self.header.get("locate", {}).get("layer") == layer:
            statement = self.header["locate"]["statement"]
            self.say(f"locate (logged): {statement}")
            return statement
        from dumpcmp.debug.locate import locate_runs
        from dumpcmp.dumps.naming import run_path

        ops = self.around(layer, previous)
        _, _, folder = self.run(0, ops, mode="all", name="locate")
        results = locate_runs(self.model, folder / "dump", self.ground_truth, fusion_json=self.last_graph,
                              threshold=self.threshold, gt_sample=self.gt_sample, **self.selection)
        self.dump_runs = [result.run for result in results]
        for result in results:  # one file a run when the dump holds several, as `dumpcmp locate` writes them
            result.write(run_path(folder / "locate.csv", result.run, self.dump_runs) if len(results) > 1
                         else folder / "locate.csv",
                         force=True)
        statement = results[0].statement() if len(results) == 1 else \
            "; ".join(f"{result.run}: {result.statement()}" for result in results)
        self.header["locate"] = {"layer": layer, "statement": statement, "folder": os.fspath(folder)}
        self.say(f"locate on {', '.join(ops)} replayed on their own device inputs (one more run, dump_mode all): "
                 f"{statement}")
        self.save()
        return statement


def bisect(model: str | os.PathLike[str], command: str, ground_truth: str | os.PathLike[str],
           out: str | os.PathLike[str], *, graph_json: str | os.PathLike[str] | None = None,
           device_model: str | os.PathLike[str] | None = None, model_name: str | None = None,
           threshold: float = 0.99, per_round: int = 1, echo: Callable[[str], None] = print,
           timeout: float | None = None, with_locate: bool = True, last: str | None = None,
           selection: dict[str, Any] | None = None, gt_sample: int | dict[int, int] | None = None) -> BisectResult:
    """Find the first layer below `threshold` with as few device runs as a binary search needs (module docstring).

    command: a shell command with placeholders {model} (`device_model`, default `model`), {acl_json}, {dump},
        {graph_json} (where the run may write the graph JSON when `graph_json` is not given) and {round};
    model_name: the acl.json's model_name (default: the device model's file stem);
    last: the last layer to search up to (a compiled op or an original layer name; default the model's last):
        for outputs that hide an error (a saturated softmax);
    per_round: layers dumped per run (1: binary search; k: the range is cut in k + 1 parts);
    with_locate: after the search, one more run dumping the layer's inputs too (dump_mode all), replayed by
        `dumpcmp.debug.locate` on them: whether the error is born in the layer or arrives with its inputs;
    selection: the runs of each round's dump to compare (time, device_id, model_name, model_id, data_index, as
        `compare_runs` takes them; default every run: a layer is below when it is in any); gt_sample: the ground
        truth's sample folder per iteration (`--gt-sample`; default iteration k with folder k/);
    echo: called with every line printed. An existing `out` holding a bisect of the same model, ground truth,
        threshold and selection is resumed."""
    model_path = Path(model)
    if not model_path.is_file():
        from dumpcmp.errors import NotFoundError

        raise NotFoundError(f"{model_path}: no such model file")
    if not any("{" + p + "}" in command for p in ("acl_json", "dump")):
        raise ConfigError("the command must use {acl_json} (the dump config of each round) or {dump} (its dump "
                          "folder): without them every run dumps the same")
    if per_round < 1:
        raise ConfigError(f"--per-round {per_round}: must be at least 1")
    if not 0 < threshold <= 1:
        raise ConfigError(f"--threshold {threshold}: must be in (0, 1]")
    device = Path(device_model) if device_model is not None else model_path
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir}: exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / STATE).exists():
        raise ConfigError(f"{out_dir}: exists, is not empty and holds no bisect to resume; choose another -o")
    out_dir.mkdir(parents=True, exist_ok=True)
    job = BisectJob(model_path, command, Path(ground_truth), out_dir,
                  graph_json=Path(graph_json) if graph_json is not None else None, device_model=device,
                  model_name=model_name or device.stem, threshold=threshold, per_round=per_round, echo=echo,
                  timeout=timeout, with_locate=with_locate, last=last, selection=selection, gt_sample=gt_sample)
    return job.search()
