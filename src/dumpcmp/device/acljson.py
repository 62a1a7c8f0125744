"""The dump configuration file an Ascend application passes to the runtime (`acl.json`, through aclInit or
aclmdlSetDump): write one from a few choices, and check one against every rule of the documentation, reporting all
problems at once, each with its JSON path and the fix.

Also the SigmaStar simulator's equivalent, `DebugConfig.txt`.

Decisions where the documentation is silent:
- A `dump_path` that does not exist or is not writable is an *error*: the documentation says it must exist and be
  writable, and the runtime then writes nothing without failing. When the file is checked on another machine than
  the one that runs the application, `remote=True` (`--remote`) turns these two into warnings. A `dump_path` that
  exists but is not a folder is always an error.
- A relative `dump_path` is resolved against `cwd` (default: the current directory), and an info line says so:
  the runtime resolves it against the application's working directory, which the checker cannot know.
- Keys this module does not know inside `dump` or a `dump_list` entry are errors (a misspelt key is silently
  ignored by the runtime, which is exactly the failure a check must catch); keys beside `dump` at the top level are
  other aclInit settings and only get an info line.
- A `dump_list` entry with `layer` but no `model_name` is a warning (the documentation calls model_name optional),
  an empty entry `{}` an error.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from dumpcmp.support import jsonfile
from dumpcmp.support.files import atomic_write_text, exists_error
from dumpcmp.errors import ConfigError

ERROR, WARNING, INFO = "error", "warning", "info"

DUMP_MODES = ("input", "output", "all")
ON_OFF = ("on", "off")
DUMP_DATA = ("tensor", "stats")
EXCEPTION_SCENES = ("aic_err_brief_dump", "aic_err_norm_dump", "aic_err_detail_dump", "lite_exception")
DUMP_SCENES = EXCEPTION_SCENES + ("watcher",)

DUMP_KEYS = ("dump_list", "dump_path", "dump_mode", "dump_op_switch", "dump_data", "dump_scene", "dump_debug")
ENTRY_KEYS = ("model_name", "layer", "watcher_nodes")
# Environment variables that, when set, take priority over dump_path (documentation's storage priority).
PATH_OVERRIDES = ("NPU_COLLECT_PATH", "ASCEND_WORK_PATH")
MODEL_FILE_SUFFIXES = (".om", ".onnx", ".pb", ".prototxt", ".caffemodel", ".air", ".mindir")


@dataclass(frozen=True)
class Problem:
    """One finding of `check_acl_json`: `severity` is "error", "warning" or "info"; `path` the JSON path of the
    value (`dump.dump_list[1].model_name`, or "(file)" for the file as a whole); `fix` says what to change."""

    severity: str
    path: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        text = f"{self.severity}: {self.path}: {self.message}"
        return f"{text}\n  fix: {self.fix}" if self.fix else text


@dataclass
class ModelDump:
    """One `dump_list` entry of a model dump: the model's name and the ops to dump (None: every op)."""

    name: str
    layers: list[str] | None = None


@dataclass
class WatcherDump:
    """One `dump_list` entry of the watcher scene: ops that may overwrite memory (`layers`, None: every op) and
    the ops whose outputs are checked (`watcher_nodes`)."""

    watcher_nodes: list[str]
    layers: list[str] | None = None


class _Object(dict):  # type: ignore[type-arg]
    """A JSON object that remembers the keys the file gave more than once (json keeps only the last)."""

    duplicates: list[str]


def _object_hook(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj and key not in obj.duplicates:
            obj.duplicates.append(key)
        obj[key] = value
    return obj


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _closest(word: str, choices: Iterable[str]) -> str | None:
    lowered = {c.lower(): c for c in choices}
    if word.lower() in lowered:
        return lowered[word.lower()]
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


class _Checker:
    def __init__(self, cwd: str | os.PathLike[str] | None, remote: bool, files: bool = True) -> None:
        self.problems: list[Problem] = []
        self.files = files  # look at dump_path on this machine
        self.cwd_given = cwd is not None
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        self.remote = remote

    def add(self, severity: str, path: str, message: str, fix: str = "") -> None:
        self.problems.append(Problem(severity, path, message, fix))

    # -- values ------------------------------------------------------------------------------------------------
    def duplicates(self, obj: Any, path: str) -> None:
        for key in getattr(obj, "duplicates", ()):
            self.add(ERROR, _key(path, key), f"the key {key!r} appears more than once; only the last one counts",
                     "keep one of them")

    def unknown_keys(self, obj: Mapping[str, Any], path: str, known: Sequence[str], where: str) -> None:
        for key in obj:
            if key in known:
                continue
            close = _closest(key, known)
            if close is not None:
                fix = f"rename it to {close!r}"
            elif where == "dump" and key in ENTRY_KEYS:
                fix = f"{key!r} belongs inside an entry of dump_list: {{\"dump_list\": [{{\"{key}\": ...}}]}}"
            elif where == "entry" and key in DUMP_KEYS:
                fix = f"{key!r} belongs in the dump object, beside dump_list, not inside an entry"
            else:
                fix = "remove it; known keys here: " + ", ".join(known)
            self.add(ERROR, _key(path, key), f"unknown key {key!r} in {where}", fix)

    def choice(self, obj: Mapping[str, Any], key: str, path: str, allowed: Sequence[str]) -> str | None:
        """The value of `key` if it is one of `allowed`; reports it otherwise. None when absent or invalid."""
        if key not in obj:
            return None
        value, where = obj[key], _key(path, key)
        listing = ", ".join(f'"{a}"' for a in allowed)
        if isinstance(value, str) and value in allowed:
            return value
        if isinstance(value, bool) and allowed == ON_OFF:
            self.add(ERROR, where, f"must be the string \"on\" or \"off\", not the boolean {json.dumps(value)}",
                     f'write "{"on" if value else "off"}"')
        elif isinstance(value, str):
            close = _closest(value, allowed)
            self.add(ERROR, where, f"{value!r} is not a valid {key} (one of {listing})",
                     f'write "{close}"' if close else f"use one of {listing}")
        else:
            self.add(ERROR, where, f"must be a string, one of {listing}; got {_kind(value)}",
                     f"use one of {listing}")
        return None

    def name_list(self, obj: Mapping[str, Any], key: str, path: str) -> list[str] | None:
        """A list of op names; problems reported. None when absent or not a list."""
        if key not in obj:
            return None
        value, where = obj[key], _key(path, key)
        if isinstance(value, str):
            self.add(ERROR, where, "must be a list of op names, got a string",
                     f'write ["{value}"]' if "," not in value else
                     "write a list with one op name per item: " + json.dumps([v.strip() for v in value.split(",")]))
            return None
        if not isinstance(value, list):
            self.add(ERROR, where, f"must be a list of op names, got {_kind(value)}", 'write ["op_a", "op_b"]')
            return None
        names: list[str] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                self.add(ERROR, f"{where}[{i}]", f"must be a non-empty op name string, got {json.dumps(item)}",
                         "remove it or write the op's name")
                continue
            if item != item.strip():
                self.add(WARNING, f"{where}[{i}]", f"{item!r} has leading or trailing spaces; op names do not",
                         f"write {item.strip()!r}")
            if item in seen:
                self.add(WARNING, f"{where}[{i}]", f"{item!r} is listed twice (first at {where}[{seen[item]}])",
                         "remove the repetition")
            else:
                seen[item] = i
            names.append(item)
        if not value:
            if key == "layer":
                self.add(WARNING, where, "an empty layer list", "remove the key to dump every op of the model, or "
                         "list the ops to dump")
            else:
                self.add(ERROR, where, f"an empty {key} list", "list the ops whose outputs are checked")
        return names

    # -- document ----------------------------------------------------------------------------------------------
    def document(self, doc: Any) -> None:
        if not isinstance(doc, Mapping):
            self.add(ERROR, "(top level)", f"must be a JSON object, got {_kind(doc)}",
                     'write {"dump": {"dump_list": [...], "dump_path": "...", ...}}')
            return
        self.duplicates(doc, "")
        others = [k for k in doc if k != "dump"]
        if "dump" not in doc:
            close = [k for k in others if _closest(k, ["dump"])]
            fix = (f"rename {close[0]!r} to \"dump\"" if close else
                   'add {"dump": {"dump_list": [{"model_name": "..."}], "dump_path": "..."}}')
            self.add(ERROR, "dump", "no \"dump\" object: the runtime dumps nothing", fix)
        for key in others:
            if "dump" in doc or not _closest(key, ["dump"]):
                self.add(INFO, key, "not a dump setting (another aclInit setting?); not checked")
        if "dump" in doc:
            self.dump(doc["dump"], "dump")

    def dump(self, d: Any, path: str) -> None:
        if not isinstance(d, Mapping):
            self.add(ERROR, path, f"must be an object, got {_kind(d)}",
                     'write {"dump_list": [{"model_name": "..."}], "dump_path": "..."}')
            return
        self.duplicates(d, path)
        self.unknown_keys(d, path, DUMP_KEYS, "dump")
        mode = self.choice(d, "dump_mode", path, DUMP_MODES)
        op_switch = self.choice(d, "dump_op_switch", path, ON_OFF)
        self.choice(d, "dump_data", path, DUMP_DATA)
        scene = self.choice(d, "dump_scene", path, DUMP_SCENES)
        debug = self.choice(d, "dump_debug", path, ON_OFF)
        watcher = scene == "watcher"
        exception = scene in EXCEPTION_SCENES

        entries = self.dump_list(d, path, watcher)
        list_path = _key(path, "dump_list")
        if isinstance(d.get("dump_list"), list) and d["dump_list"]:
            entries = entries or [{}]  # entries that are not objects are reported; the list is still not empty
        model_dump = bool(entries) and not watcher
        op_dump = op_switch == "on"

        if exception and model_dump:
            self.add(ERROR, _key(path, "dump_scene"),
                     f"exception dump ({scene}) cannot be combined with model dump (dump_list has "
                     f"{len(entries or [])} entr{'y' if len(entries or []) == 1 else 'ies'})",
                     "remove the dump_list entries, or remove dump_scene and dump the exception in another run")
        if exception and op_dump:
            self.add(ERROR, _key(path, "dump_op_switch"),
                     f"exception dump ({scene}) cannot be combined with single-operator dump",
                     'set dump_op_switch to "off" or remove dump_scene')
        if debug == "on" and model_dump:
            self.add(ERROR, _key(path, "dump_debug"),
                     "overflow/underflow dump (dump_debug on) cannot be combined with model dump",
                     'set dump_debug to "off", or empty dump_list and dump the model in another run')
        if debug == "on" and op_dump:
            self.add(ERROR, _key(path, "dump_debug"),
                     "overflow/underflow dump (dump_debug on) cannot be combined with single-operator dump",
                     'set dump_debug or dump_op_switch to "off"')
        if watcher:
            if mode is not None and mode != "output":
                self.add(ERROR, _key(path, "dump_mode"), f'the watcher scene only dumps outputs, not "{mode}"',
                         'write "output" (or remove dump_mode)')
            if debug == "on":
                self.add(ERROR, _key(path, "dump_debug"), "dump_debug cannot be on in the watcher scene",
                         'set dump_debug to "off"')
            if op_dump:
                self.add(ERROR, _key(path, "dump_op_switch"), "dump_op_switch cannot be on in the watcher scene",
                         'set dump_op_switch to "off"')
            if "dump_list" not in d or entries == []:
                self.add(ERROR, list_path, "the watcher scene needs dump_list entries with watcher_nodes",
                         'write "dump_list": [{"layer": ["A"], "watcher_nodes": ["C"]}]')
        elif not exception and debug != "on":
            if "dump_list" not in d:
                if op_dump:
                    self.add(WARNING, list_path, "missing; the documented single-operator form has an empty list",
                             'add "dump_list": []')
                else:
                    self.add(ERROR, list_path, "missing: without it (or dump_op_switch on, or a dump_scene, or "
                             "dump_debug on) nothing is dumped",
                             'add "dump_list": [{"model_name": "..."}] (one entry per model), or "dump_list": [] '
                             'with "dump_op_switch": "on" for single-operator dump')
            elif entries == [] and not op_dump:
                self.add(ERROR, list_path, "empty, and dump_op_switch is not on: nothing is dumped",
                         'add {"model_name": "..."} entries, or set "dump_op_switch": "on" for single-operator dump')

        needs_path = watcher or debug == "on" or model_dump or op_dump
        self.dump_path(d, path, needs_path, scene, debug == "on")

    def dump_list(self, d: Mapping[str, Any], path: str, watcher: bool) -> list[Mapping[str, Any]] | None:
        if "dump_list" not in d:
            return None
        where = _key(path, "dump_list")
        value = d["dump_list"]
        if not isinstance(value, list):
            fix = ("wrap it in a list: [ ... ]" if isinstance(value, Mapping) else
                   'write [{"model_name": "..."}]')
            self.add(ERROR, where, f"must be a list of entries, got {_kind(value)}", fix)
            return None
        entries: list[Mapping[str, Any]] = []
        first_seen: dict[str, str] = {}
        for i, entry in enumerate(value):
            at = f"{where}[{i}]"
            if not isinstance(entry, Mapping):
                fix = (f'write {{"model_name": {json.dumps(entry)}}}' if isinstance(entry, str) else
                       'write {"model_name": "..."}')
                self.add(ERROR, at, f"must be an object, got {_kind(entry)}", fix)
                continue
            entries.append(entry)
            self.duplicates(entry, at)
            self.unknown_keys(entry, at, ENTRY_KEYS, "entry")
            self.name_list(entry, "layer", at)
            name = entry.get("model_name")
            if watcher:
                if "model_name" in entry:
                    self.add(ERROR, _key(at, "model_name"), "model_name is not allowed in the watcher scene",
                             "remove it: the watcher applies to the ops named in layer and watcher_nodes")
                if "watcher_nodes" not in entry:
                    self.add(ERROR, at, "a watcher entry needs watcher_nodes (the ops whose outputs are checked)",
                             'add "watcher_nodes": ["op_name", ...]')
                else:
                    self.name_list(entry, "watcher_nodes", at)
                continue
            if "watcher_nodes" in entry:
                self.add(ERROR, _key(at, "watcher_nodes"), "watcher_nodes only works with dump_scene \"watcher\"",
                         'set "dump_scene": "watcher" (and remove model_name), or remove watcher_nodes')
            if "model_name" not in entry:
                if not entry:
                    self.add(ERROR, at, "an empty entry dumps nothing", 'write {"model_name": "..."} or remove it')
                elif "layer" in entry:
                    self.add(WARNING, at, "no model_name: the layers are not tied to a model",
                             'add "model_name": the model file name without extension')
                continue
            mat = _key(at, "model_name")
            if not isinstance(name, str) or not name.strip():
                self.add(ERROR, mat, f"must be a non-empty string, got {json.dumps(name)}",
                         "write the model file name without extension, or the graph's name")
                continue
            if name in first_seen:
                self.add(ERROR, mat, f"model {name!r} is listed twice (first at {first_seen[name]})",
                         "keep one entry per model; merge their layer lists (no layer: every op)")
            else:
                first_seen[name] = mat
            suffix = next((s for s in MODEL_FILE_SUFFIXES if name.lower().endswith(s)), None)
            if "/" in name or "\\" in name:
                self.add(WARNING, mat, f"{name!r} looks like a path; model_name is the model file name without "
                         "folder and extension", f"write {Path(name).stem!r}")
            elif suffix:
                self.add(WARNING, mat, f"{name!r} ends in {suffix}; model_name is the file name without extension",
                         f"write {name[: -len(suffix)]!r}")
        return entries

    def dump_path(self, d: Mapping[str, Any], path: str, needed: bool, scene: str | None, debug: bool) -> None:
        where = _key(path, "dump_path")
        if "dump_path" not in d:
            if needed:
                why = ("the watcher scene" if scene == "watcher" else
                       "overflow/underflow dump (dump_debug on)" if debug else "model and single-operator dump")
                self.add(ERROR, where, f"missing: {why} needs it",
                         'add "dump_path": "/absolute/folder" (it must exist and be writable)')
            elif scene in EXCEPTION_SCENES:
                self.add(INFO, where, "not set: exception dumps go to NPU_COLLECT_PATH, ASCEND_WORK_PATH or the "
                         "application's current directory")
            return
        value = d["dump_path"]
        if not isinstance(value, str) or not value.strip():
            self.add(ERROR, where, f"must be a non-empty folder path string, got {json.dumps(value)}",
                     'write "/absolute/folder" or a folder relative to where the application runs')
            return
        if value != value.strip():
            self.add(WARNING, where, f"{value!r} has leading or trailing spaces", f"write {value.strip()!r}")
        if "$" in value or value.startswith("~"):
            self.add(WARNING, where, f"{value!r}: `$VARIABLE` and `~` are expanded by shells; a JSON file is taken "
                     "as written", "write the path out in full")
        for env in PATH_OVERRIDES:
            if os.environ.get(env):
                self.add(INFO, where, f"{env} is set in this environment ({os.environ[env]!r}); it takes priority "
                         "over dump_path")
                break
        if not self.files:
            return
        target = Path(value)
        if not target.is_absolute():
            base = "--cwd" if self.cwd_given else "the current directory"
            target = self.cwd / target
            self.add(INFO, where, f"{value!r} is relative: the runtime resolves it against the application's "
                     f"working directory; checked here against {base} as {str(target)!r}")
        severity = WARNING if self.remote else ERROR
        if not target.exists():
            self.add(severity, where, f"{str(target)!r} does not exist; it must exist before the application runs",
                     f"create it before running: mkdir -p {_shell_quote(str(target))}")
        elif not target.is_dir():
            self.add(ERROR, where, f"{str(target)!r} exists but is not a folder", "choose a folder")
        elif not os.access(target, os.W_OK | os.X_OK):
            self.add(severity, where, f"{str(target)!r} is not writable by this user",
                     "make it writable for the user that runs the application (chmod u+wx), or choose another "
                     "folder")


def _shell_quote(text: str) -> str:
    return shlex.quote(text)


def _parse(source: str | os.PathLike[str]) -> tuple[Any, list[Problem]]:
    path = Path(source)
    raw = jsonfile.read_bytes(path, "acl.json", max_bytes=64 << 20)
    problems: list[Problem] = []
    if raw.startswith(b"\xef\xbb\xbf"):
        problems.append(Problem(WARNING, "(file)", "starts with a UTF-8 byte-order mark, which JSON does not allow "
                                "and some parsers reject", "save the file as UTF-8 without BOM"))
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        problems.append(Problem(ERROR, "(file)", f"not UTF-8 text (byte {error.start}, line {line})",
                                "save the file as UTF-8"))
        return None, problems
    if not text.strip():
        problems.append(Problem(ERROR, "(file)", "the file is empty",
                                'write {"dump": {"dump_list": [...], "dump_path": "..."}}, e.g. with '
                                "`dumpcmp acl-json new`"))
        return None, problems
    try:
        value = json.loads(text, object_pairs_hook=_object_hook)
    except json.JSONDecodeError as error:
        hint = "check for a missing or extra comma, an unclosed bracket or an unquoted key near there"
        if "'" in text and "Expecting property name enclosed in double quotes" in error.msg:
            hint = "JSON strings and keys use double quotes \", not single quotes '"
        problems.append(Problem(ERROR, "(file)", f"not valid JSON: {error.msg} at line {error.lineno}, column "
                                f"{error.colno}", hint))
        return None, problems
    except (RecursionError, ValueError) as error:  # deep nesting; a number of thousands of digits
        what = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        problems.append(Problem(ERROR, "(file)", f"not valid JSON: {what}", "an acl.json nests four levels"))
        return None, problems
    if jsonfile.depth(value) > jsonfile.MAX_DEPTH:
        problems.append(Problem(ERROR, "(file)", f"not valid JSON: nested more than {jsonfile.MAX_DEPTH} levels",
                                "an acl.json nests four levels"))
        return None, problems
    lone = jsonfile.unpaired_surrogate(text)
    if lone is not None:
        problems.append(Problem(ERROR, "(file)", f"not valid JSON text: the unpaired surrogate escape {lone[0]} at "
                                f"line {lone[1]} stands for no character",
                                "write the character itself, or both halves of a surrogate pair"))
        return None, problems
    return value, problems


def check_acl_json(source: str | os.PathLike[str] | Mapping[str, Any], cwd: str | os.PathLike[str] | None = None,
                   *, remote: bool = False) -> list[Problem]:
    """Every problem of an acl.json (a file path, or the parsed dict), in document order.

    `cwd` is where a relative dump_path is resolved (default: the current directory). `remote=True`: the dump_path
    lives on another machine, so a missing or read-only dump_path is a warning instead of an error.
    Raises ConfigError only when the file cannot be read at all.
    """
    if isinstance(source, Mapping):
        doc, problems = source, []
    else:
        doc, problems = _parse(source)
        if doc is None:
            return problems
    checker = _Checker(cwd, remote)
    checker.problems = problems
    checker.document(doc)
    return checker.problems


def has_errors(problems: Iterable[Problem]) -> bool:
    return any(p.severity == ERROR for p in problems)


def _names(values: Sequence[str] | None, what: str) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        raise ConfigError(f"{what}: give op names as a list, not the string {values!r}")
    names = list(values)
    bad = [v for v in names if not isinstance(v, str) or not v.strip()]
    if bad:
        raise ConfigError(f"{what}: op names must be non-empty strings, got {bad!r}")
    return names


def new_acl_json(models: Sequence[str | ModelDump | tuple[str, Sequence[str] | None]] = (), *,
                 dump_path: str | None = None, dump_mode: str | None = None, dump_op_switch: str | None = None,
                 dump_data: str | None = None, dump_scene: str | None = None, dump_debug: str | None = None,
                 watchers: Sequence[WatcherDump | tuple[Sequence[str] | None, Sequence[str]]] = ()) -> dict[str, Any]:
    """A valid acl.json as a dict. Options left at None are written only where the dump kind needs them
    (model/single-op dump: dump_mode "output", dump_op_switch "off", dump_data "tensor"; watcher: dump_mode
    "output"). `watchers` sets dump_scene "watcher". Raises ConfigError listing every rule the options break; the
    file system is not looked at (the folder may be on another machine): check the written file for that."""
    entries: list[dict[str, Any]] = []
    for m in models:
        if isinstance(m, str):
            m = ModelDump(m)
        elif not isinstance(m, ModelDump):
            m = ModelDump(m[0], m[1])  # type: ignore[arg-type]
        entry: dict[str, Any] = {"model_name": m.name}
        layers = _names(m.layers, f"model {m.name!r}")
        if layers is not None:
            entry["layer"] = layers
        entries.append(entry)
    if watchers:
        if dump_scene not in (None, "watcher"):
            raise ConfigError(f"watcher entries need dump_scene \"watcher\", not {dump_scene!r}")
        dump_scene = "watcher"
        for w in watchers:
            if not isinstance(w, WatcherDump):
                w = WatcherDump(w[1], w[0])  # type: ignore[arg-type]
            entry = {}
            layers = _names(w.layers, "watcher layer")
            if layers is not None:
                entry["layer"] = layers
            entry["watcher_nodes"] = _names(w.watcher_nodes, "watcher_nodes")
            entries.append(entry)
    config: dict[str, Any] = {}
    exception = dump_scene in EXCEPTION_SCENES
    debug_only = dump_debug == "on" and not models and dump_op_switch != "on"
    if dump_scene == "watcher":
        config["dump_list"] = entries
        config["dump_path"] = dump_path
        config["dump_mode"] = dump_mode or "output"
    elif exception or debug_only:
        if models:
            config["dump_list"] = entries
        if dump_path is not None or not exception:
            config["dump_path"] = dump_path
        for key, value in (("dump_mode", dump_mode), ("dump_data", dump_data), ("dump_op_switch", dump_op_switch)):
            if value is not None:
                config[key] = value
    else:
        config["dump_list"] = entries
        config["dump_path"] = dump_path
        config["dump_mode"] = dump_mode or "output"
        config["dump_op_switch"] = dump_op_switch or "off"
        config["dump_data"] = dump_data or "tensor"
    if dump_scene is not None:
        config["dump_scene"] = dump_scene
    if dump_debug is not None:
        config["dump_debug"] = dump_debug
    if dump_scene == "watcher":
        for key, value in (("dump_op_switch", dump_op_switch), ("dump_data", dump_data)):
            if value is not None:
                config[key] = value
    if config.get("dump_path", "") is None:
        del config["dump_path"]
    document = {"dump": config}
    # Only the rules: the file system is the business of checking the written file (see docstring).
    checker = _Checker(None, remote=True, files=False)
    checker.document(document)
    errors = [p for p in checker.problems if p.severity == ERROR]
    if errors:
        raise ConfigError("these options make an invalid acl.json:\n" + "\n".join(str(p) for p in errors))
    return document


def acl_json_text(config: Mapping[str, Any]) -> str:
    return json.dumps(config, indent=2, ensure_ascii=False) + "\n"


def _write_new(path: Path, text: str, force: bool) -> None:
    if path.exists() and not force:
        raise exists_error(path, "config")
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; give a file name")
    atomic_write_text(path, text, force=force)


def write_acl_json(config: Mapping[str, Any], path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write `config` as JSON to `path` (whole or not at all). An existing file is replaced only with force=True."""
    out = Path(path)
    _write_new(out, acl_json_text(config), force)
    return out


# -- SigmaStar DebugConfig.txt ---------------------------------------------------------------------------------
SIGMASTAR_SWITCHES = {  # switch -> on by default (the SDK's recommended settings)
    "dumpTensor": True,
    "eliminateGarbage": True,
    "dequantFixed": True,
    "dumpasstring": False,
    "disableDomainFuseOps": False,
}
SIGMASTAR_PATH_MAX = 122  # bytes


def new_sigmastar_config(switches: Mapping[str, bool] | None = None, path: str | None = None) -> str:
    """The text of a SigmaStar `DebugConfig.txt`: one line per switch (`#` in front: off) and `path=`.
    `switches` overrides the defaults of SIGMASTAR_SWITCHES; `path` must be absolute and at most 122 bytes
    (None or "": the simulator writes to $HOME)."""
    values = dict(SIGMASTAR_SWITCHES)
    for name, on in (switches or {}).items():
        if name not in values:
            close = _closest(name, values)
            raise ConfigError(f"unknown DebugConfig.txt switch {name!r}" +
                              (f"; did you mean {close!r}?" if close else f"; known: {', '.join(values)}"))
        values[name] = bool(on)
    if path:
        if not path.startswith("/"):
            raise ConfigError(f"DebugConfig.txt path {path!r} must be absolute (start with /)")
        size = len(path.encode("utf-8"))
        if size > SIGMASTAR_PATH_MAX:
            raise ConfigError(f"DebugConfig.txt path is {size} bytes; the simulator takes at most "
                              f"{SIGMASTAR_PATH_MAX}: choose a shorter folder")
        if any(c in path for c in "\r\n"):
            raise ConfigError("DebugConfig.txt path must be one line")
    lines = [("" if on else "#") + name for name, on in values.items()]
    lines.append(f"path={path or ''}")
    return "\n".join(lines) + "\n"


def read_sigmastar_config(text: str) -> tuple[dict[str, bool], str | None]:
    """The switches and path of a DebugConfig.txt text (for checking what was written)."""
    switches = {name: False for name in SIGMASTAR_SWITCHES}
    path = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("path="):
            path = line[5:] or None
            continue
        on = not line.startswith("#")
        name = line.lstrip("#").strip()
        if name in switches:
            switches[name] = on
    return switches, path


def write_sigmastar_config(text: str, path: str | os.PathLike[str], *, force: bool = False) -> Path:
    out = Path(path)
    _write_new(out, text, force)
    return out


__all__ = [
    "DUMP_DATA", "DUMP_MODES", "DUMP_SCENES", "EXCEPTION_SCENES", "ModelDump", "Problem", "WatcherDump",
    "acl_json_text", "check_acl_json", "has_errors", "new_acl_json", "new_sigmastar_config",
    "read_sigmastar_config", "write_acl_json", "write_sigmastar_config",
]
