"""acl.json: every documented rule with a failing and a passing case, all problems reported at once, the CLI's exit
codes, and new -> check round trips. SigmaStar's DebugConfig.txt."""

from __future__ import annotations

import copy
import json
import os

import pytest

from dumpcmp.device.acljson import (
    ModelDump,
    WatcherDump,
    check_acl_json,
    has_errors,
    new_acl_json,
    new_sigmastar_config,
    read_sigmastar_config,
    write_acl_json,
)
from dumpcmp.cli import main
from dumpcmp.errors import ConfigError


@pytest.fixture
def dump_dir(tmp_path):
    d = tmp_path / "dump"
    d.mkdir()
    return str(d)


def model_dump(path):
    return {"dump": {"dump_list": [{"model_name": "ResNet-101"},
                                   {"model_name": "ResNet-50", "layer": ["conv1conv1_relu", "pool1"]}],
                     "dump_path": path, "dump_mode": "output", "dump_op_switch": "off", "dump_data": "tensor"}}


def errors_at(problems):
    return [(p.path, p.message) for p in problems if p.severity == "error"]


def only(problems, severity="error"):
    found = [p for p in problems if p.severity == severity]
    assert len(found) == 1, found
    return found[0]


def test_documented_examples_are_valid(dump_dir):
    examples = [
        model_dump(dump_dir),
        {"dump": {"dump_path": dump_dir, "dump_list": [], "dump_op_switch": "on", "dump_data": "tensor"}},
        {"dump": {"dump_path": dump_dir, "dump_scene": "aic_err_brief_dump"}},
        {"dump": {"dump_scene": "lite_exception"}},
        {"dump": {"dump_path": dump_dir, "dump_debug": "on"}},
        {"dump": {"dump_list": [{"layer": ["A", "B"], "watcher_nodes": ["C", "D"]}], "dump_path": dump_dir,
                  "dump_mode": "output", "dump_scene": "watcher"}},
    ]
    for doc in examples:
        problems = check_acl_json(doc)
        assert not has_errors(problems), (doc, problems)
        assert not [p for p in problems if p.severity == "warning"], (doc, problems)


# (mutation of the valid model dump, path of the one error, words of its message, words of its fix)
RULES = [
    ("no_dump", lambda d: {"Dump": d["dump"]}, "dump", "no \"dump\" object", "rename 'Dump'"),
    ("dump_not_object", lambda d: {"dump": [d["dump"]]}, "dump", "must be an object", ""),
    ("unknown_key", lambda d: _set(d, "dump_mod", "all"), "dump.dump_mod", "unknown key", "'dump_mode'"),
    ("entry_key_in_dump", lambda d: _set(d, "layer", ["x"]), "dump.layer", "unknown key", "inside an entry"),
    ("unknown_entry_key", lambda d: _entry(d, 1, "layers", ["x"]), "dump.dump_list[1].layers", "unknown key",
     "'layer'"),
    ("mode_value", lambda d: _set(d, "dump_mode", "outputs"), "dump.dump_mode", "not a valid dump_mode",
     '"output"'),
    ("mode_type", lambda d: _set(d, "dump_mode", 1), "dump.dump_mode", "got a number", ""),
    ("op_switch_bool", lambda d: _set(d, "dump_op_switch", False), "dump.dump_op_switch", "not the boolean false",
     '"off"'),
    ("data_value", lambda d: _set(d, "dump_data", "statistics"), "dump.dump_data", "not a valid dump_data", ""),
    ("scene_value", lambda d: _set(d, "dump_scene", "aic_err_brief"), "dump.dump_scene", "not a valid dump_scene",
     '"aic_err_brief_dump"'),
    ("debug_case", lambda d: _set(d, "dump_debug", "ON"), "dump.dump_debug", "not a valid dump_debug", '"on"'),
    ("list_type", lambda d: _set(d, "dump_list", {"model_name": "a"}), "dump.dump_list", "must be a list",
     "wrap it"),
    ("entry_type", lambda d: _set(d, "dump_list", ["ResNet-50"]), "dump.dump_list[0]", "must be an object",
     '{"model_name": "ResNet-50"}'),
    ("empty_entry", lambda d: _set(d, "dump_list", [{}]), "dump.dump_list[0]", "empty entry", ""),
    ("model_name_type", lambda d: _entry(d, 0, "model_name", ""), "dump.dump_list[0].model_name",
     "non-empty string", ""),
    ("duplicate_model", lambda d: _entry(d, 1, "model_name", "ResNet-101"), "dump.dump_list[1].model_name",
     "listed twice (first at dump.dump_list[0].model_name)", "merge"),
    ("layer_string", lambda d: _entry(d, 1, "layer", "conv1,pool1"), "dump.dump_list[1].layer",
     "got a string", '["conv1", "pool1"]'),
    ("layer_item", lambda d: _entry(d, 1, "layer", ["conv1", 3]), "dump.dump_list[1].layer[1]",
     "non-empty op name", ""),
    ("missing_list", lambda d: _drop(d, "dump_list"), "dump.dump_list", "missing", '"dump_list": []'),
    ("empty_list", lambda d: _set(d, "dump_list", []), "dump.dump_list", "dump_op_switch is not on", "on"),
    ("missing_path", lambda d: _drop(d, "dump_path"), "dump.dump_path", "missing", "must exist"),
    ("path_type", lambda d: _set(d, "dump_path", ["a"]), "dump.dump_path", "non-empty folder path", ""),
    ("exception_with_model", lambda d: _set(d, "dump_scene", "aic_err_norm_dump"), "dump.dump_scene",
     "cannot be combined with model dump", "remove the dump_list entries"),
    ("exception_with_op", lambda d: _set(_set(_set(d, "dump_list", []), "dump_op_switch", "on"), "dump_scene",
                                         "lite_exception"), "dump.dump_op_switch",
     "cannot be combined with single-operator dump", ""),
    ("debug_with_model", lambda d: _set(d, "dump_debug", "on"), "dump.dump_debug",
     "cannot be combined with model dump", ""),
    ("debug_with_op", lambda d: _set(_set(_set(d, "dump_list", []), "dump_op_switch", "on"), "dump_debug", "on"),
     "dump.dump_debug", "cannot be combined with single-operator dump", ""),
    ("watcher_nodes_outside_watcher", lambda d: _entry(d, 0, "watcher_nodes", ["C"]),
     "dump.dump_list[0].watcher_nodes", "only works with dump_scene", "watcher"),
    ("duplicate_key", None, "dump.dump_mode", "appears more than once", "keep one"),
]


def _set(doc, key, value):
    doc["dump"][key] = value
    return doc


def _drop(doc, key):
    del doc["dump"][key]
    return doc


def _entry(doc, i, key, value):
    doc["dump"]["dump_list"][i][key] = value
    return doc


@pytest.mark.parametrize("name, mutate, path, message, fix", RULES, ids=[r[0] for r in RULES])
def test_each_rule_fails_and_the_valid_document_passes(name, mutate, path, message, fix, dump_dir, tmp_path):
    valid = model_dump(dump_dir)
    assert check_acl_json(valid) == []
    if mutate is None:  # duplicate keys only exist in a file
        text = json.dumps(valid).replace('"dump_mode": "output"', '"dump_mode": "all", "dump_mode": "output"')
        source = tmp_path / "acl.json"
        source.write_text(text)
    else:
        source = mutate(copy.deepcopy(valid))
    problem = only(check_acl_json(source))
    assert problem.path == path
    assert message in problem.message
    assert fix in problem.fix


WATCHER = {"dump": {"dump_list": [{"layer": ["A", "B"], "watcher_nodes": ["C", "D"]}], "dump_mode": "output",
                    "dump_scene": "watcher"}}


@pytest.mark.parametrize("mutate, path, message", [
    (lambda d: _entry(d, 0, "model_name", "net"), "dump.dump_list[0].model_name", "not allowed in the watcher"),
    (lambda d: _set(d, "dump_mode", "all"), "dump.dump_mode", "only dumps outputs"),
    (lambda d: _set(d, "dump_debug", "on"), "dump.dump_debug", "cannot be on in the watcher"),
    (lambda d: _set(d, "dump_op_switch", "on"), "dump.dump_op_switch", "cannot be on in the watcher"),
    (lambda d: d["dump"]["dump_list"][0].pop("watcher_nodes") and d, "dump.dump_list[0]", "needs watcher_nodes"),
    (lambda d: _entry(d, 0, "watcher_nodes", []), "dump.dump_list[0].watcher_nodes", "empty watcher_nodes"),
    (lambda d: _set(d, "dump_list", []), "dump.dump_list", "needs dump_list entries"),
    (lambda d: _drop(d, "dump_path"), "dump.dump_path", "the watcher scene needs it"),
])
def test_watcher_rules(mutate, path, message, dump_dir):
    valid = copy.deepcopy(WATCHER)
    valid["dump"]["dump_path"] = dump_dir
    assert check_acl_json(valid) == []
    # a watcher entry without layer is valid too (checks after every op)
    no_layer = copy.deepcopy(valid)
    del no_layer["dump"]["dump_list"][0]["layer"]
    assert check_acl_json(no_layer) == []
    problem = only(check_acl_json(mutate(copy.deepcopy(valid))))
    assert (problem.path, message in problem.message) == (path, True)


def test_debug_needs_dump_path():
    problem = only(check_acl_json({"dump": {"dump_debug": "on"}}))
    assert problem.path == "dump.dump_path" and "dump_debug on" in problem.message


def test_exception_without_path_is_fine_and_says_where_files_go():
    problems = check_acl_json({"dump": {"dump_scene": "aic_err_detail_dump"}})
    assert not has_errors(problems)
    assert any(p.severity == "info" and "NPU_COLLECT_PATH" in p.message for p in problems)


def test_single_op_dump_without_list_is_a_warning(dump_dir):
    problems = check_acl_json({"dump": {"dump_path": dump_dir, "dump_op_switch": "on"}})
    assert only(problems, "warning").path == "dump.dump_list"
    assert not has_errors(problems)


def test_warnings_for_suspicious_values(dump_dir):
    doc = model_dump(dump_dir)
    doc["dump"]["dump_list"][0]["model_name"] = "resnet50.om"
    doc["dump"]["dump_list"][1]["layer"] = ["conv1", "conv1"]
    doc["dump"]["dump_list"].append({"model_name": "models/net"})
    doc["dump"]["dump_list"].append({"model_name": "n3", "layer": []})
    doc["dump"]["dump_list"].append({"layer": ["x"]})
    problems = check_acl_json(doc)
    assert not has_errors(problems)
    warned = {p.path: p for p in problems if p.severity == "warning"}
    assert warned["dump.dump_list[0].model_name"].fix == "write 'resnet50'"
    assert "listed twice" in warned["dump.dump_list[1].layer[1]"].message
    assert warned["dump.dump_list[2].model_name"].fix == "write 'net'"
    assert "empty layer list" in warned["dump.dump_list[3].layer"].message
    assert "no model_name" in warned["dump.dump_list[4]"].message


def test_unknown_top_level_key_is_only_info(dump_dir):
    doc = model_dump(dump_dir)
    doc["profiler"] = {"switch": "on"}
    problems = check_acl_json(doc)
    assert [(p.severity, p.path) for p in problems] == [("info", "profiler")]


# -- dump_path on the file system ------------------------------------------------------------------------------
def test_relative_path_is_resolved_against_cwd(tmp_path):
    (tmp_path / "out").mkdir()
    doc = model_dump("out")
    problems = check_acl_json(doc, cwd=tmp_path)
    assert not has_errors(problems)
    info = only(problems, "info")
    assert info.path == "dump.dump_path" and str(tmp_path / "out") in info.message and "--cwd" in info.message
    # against another folder it does not exist: an error naming the resolved path
    other = tmp_path / "elsewhere"
    other.mkdir()
    error = only(check_acl_json(doc, cwd=other))
    assert str(other / "out") in error.message and error.fix.startswith("create it")


def test_relative_path_defaults_to_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    info = only(check_acl_json(model_dump("out")), "info")
    assert "the current directory" in info.message and str(tmp_path / "out") in info.message


def test_missing_path_is_an_error_or_with_remote_a_warning(tmp_path):
    doc = model_dump(str(tmp_path / "absent"))
    assert only(check_acl_json(doc)).path == "dump.dump_path"
    problems = check_acl_json(doc, remote=True)
    assert not has_errors(problems) and "does not exist" in only(problems, "warning").message


def test_path_that_is_a_file_is_always_an_error(tmp_path):
    (tmp_path / "f").write_text("x")
    assert "not a folder" in only(check_acl_json(model_dump(str(tmp_path / "f")), remote=True)).message


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can write anywhere")
def test_read_only_path(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert "not writable" in only(check_acl_json(model_dump(str(ro)))).message
    finally:
        ro.chmod(0o700)


def test_read_only_path_with_access_mocked(tmp_path, monkeypatch):
    # root (CI containers) can write anywhere, so the access check itself is exercised through os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    problem = only(check_acl_json(model_dump(str(tmp_path))))
    assert "not writable" in problem.message and "chmod" in problem.fix


def test_environment_override_is_mentioned(dump_dir, monkeypatch):
    monkeypatch.setenv("ASCEND_WORK_PATH", "/somewhere")
    monkeypatch.delenv("NPU_COLLECT_PATH", raising=False)
    problems = check_acl_json(model_dump(dump_dir))
    assert "ASCEND_WORK_PATH" in only(problems, "info").message


def test_shell_syntax_in_path_warns(tmp_path):
    problems = check_acl_json(model_dump("$HOME/output"), cwd=tmp_path, remote=True)
    assert any(p.severity == "warning" and "$" in p.message for p in problems)


# -- files -----------------------------------------------------------------------------------------------------
def test_invalid_json_reports_line_and_column(tmp_path):
    f = tmp_path / "acl.json"
    f.write_text('{\n  "dump": {\n    "dump_list": [,]\n  }\n}\n')
    problem = only(check_acl_json(f))
    assert problem.path == "(file)" and "line 3, column 19" in problem.message


def test_single_quotes_get_a_specific_hint(tmp_path):
    f = tmp_path / "acl.json"
    f.write_text("{'dump': {}}")
    assert "double quotes" in only(check_acl_json(f)).fix


def test_empty_and_unreadable_files(tmp_path):
    f = tmp_path / "acl.json"
    f.write_text("  \n")
    assert "empty" in only(check_acl_json(f)).message
    with pytest.raises(ConfigError, match="absent.json: cannot read"):
        check_acl_json(tmp_path / "absent.json")


def test_all_problems_at_once(tmp_path):
    doc = {"dump": {"dump_list": [{"model_name": "a"}, {"model_name": "a", "layers": ["x"]}, "b"],
                    "dump_path": str(tmp_path / "nope"), "dump_mode": "outputs", "dump_op_switch": True,
                    "dump_scene": "aic_err_brief_dump", "dumpdata": "x"}}
    problems = check_acl_json(doc)
    assert sorted(path for path, _ in errors_at(problems)) == sorted([
        "dump.dumpdata", "dump.dump_mode", "dump.dump_op_switch", "dump.dump_list[1].layers",
        "dump.dump_list[1].model_name", "dump.dump_list[2]", "dump.dump_scene", "dump.dump_path"])
    assert all(p.fix for p in problems if p.severity == "error")


# -- new -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    dict(models=["a", ("b", ["conv1", "pool1"]), ModelDump("c", ["x"])], dump_mode="all", dump_data="stats"),
    dict(dump_op_switch="on"),
    dict(models=["a"], dump_op_switch="on"),
    dict(dump_scene="aic_err_norm_dump"),
    dict(dump_debug="on"),
    dict(watchers=[(["A", "B"], ["C", "D"]), WatcherDump(["E"])]),
])
def test_new_then_check_round_trip(kwargs, dump_dir, tmp_path):
    config = new_acl_json(dump_path=dump_dir, **kwargs)
    path = write_acl_json(config, tmp_path / "acl.json")
    assert json.loads(path.read_text()) == config
    assert not has_errors(check_acl_json(path))
    if "models" in kwargs:
        entries = config["dump"]["dump_list"]
        assert entries[0] == {"model_name": "a"}
    if "watchers" in kwargs:
        assert config["dump"]["dump_list"] == [{"layer": ["A", "B"], "watcher_nodes": ["C", "D"]},
                                               {"watcher_nodes": ["E"]}]
        assert config["dump"]["dump_scene"] == "watcher"


def test_new_defaults_match_the_documented_example(dump_dir):
    config = new_acl_json([("ResNet-101", None), ("ResNet-50", ["conv1conv1_relu", "pool1"])], dump_path=dump_dir)
    assert config == model_dump(dump_dir)


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(models=["a"], dump_debug="on", dump_path="/x"), "cannot be combined with model dump"),
    (dict(models=["a", "a"], dump_path="/x"), "listed twice"),
    (dict(models=["a"]), "dump_path: missing"),
    (dict(dump_path="/x"), "dump_list: empty"),
    (dict(models=["a"], dump_scene="lite_exception", dump_path="/x"), "cannot be combined with model dump"),
    (dict(watchers=[(None, ["C"])], dump_mode="all", dump_path="/x"), "only dumps outputs"),
    (dict(models=[("a", "conv1")], dump_path="/x"), "as a list"),
])
def test_new_refuses_invalid_options(kwargs, pattern):
    with pytest.raises(ConfigError, match=pattern):
        new_acl_json(**kwargs)


def test_write_never_overwrites_without_force(tmp_path, dump_dir):
    target = tmp_path / "acl.json"
    target.write_text("keep me")
    config = new_acl_json(["a"], dump_path=dump_dir)
    with pytest.raises(ConfigError, match="already exists"):
        write_acl_json(config, target)
    assert target.read_text() == "keep me"
    write_acl_json(config, target, force=True)
    assert json.loads(target.read_text()) == config


# -- CLI -------------------------------------------------------------------------------------------------------
def test_cli_new_and_check(tmp_path, dump_dir, capsys):
    out = tmp_path / "acl.json"
    assert main(["acl-json", "new", "-o", str(out), "--model", "a", "--layer", "conv,1", "--layer", "pool1",
                 "--model", "b:op1,op2", "--model", "c", "--path", dump_dir, "--mode", "all"]) == 0
    config = json.loads(out.read_text())
    assert config["dump"]["dump_list"] == [{"model_name": "a", "layer": ["conv,1", "pool1"]},
                                           {"model_name": "b", "layer": ["op1", "op2"]}, {"model_name": "c"}]
    assert config["dump"]["dump_mode"] == "all"
    capsys.readouterr()
    assert main(["acl-json", "check", str(out)]) == 0
    assert "valid: 0 errors, 0 warnings" in capsys.readouterr().out
    # refuses to overwrite, then invalid options: exit 2 with the rule
    assert main(["acl-json", "new", "-o", str(out), "--model", "a", "--path", dump_dir]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["acl-json", "new", "-o", "-", "--model", "a", "--debug", "on", "--path", dump_dir]) == 2
    assert "cannot be combined with model dump" in capsys.readouterr().err


def test_cli_new_watcher_and_stdout(dump_dir, capsys):
    assert main(["acl-json", "new", "-o", "-", "--watcher", "A,B:C,D", "--watcher", ":E", "--path", dump_dir]) == 0
    config = json.loads(capsys.readouterr().out)
    assert config["dump"]["dump_list"] == [{"layer": ["A", "B"], "watcher_nodes": ["C", "D"]},
                                           {"watcher_nodes": ["E"]}]


def test_cli_new_missing_path_warns_but_writes(tmp_path, capsys):
    out = tmp_path / "acl.json"
    assert main(["acl-json", "new", "-o", str(out), "--model", "a", "--path", str(tmp_path / "later")]) == 0
    assert "warning: dump.dump_path" in capsys.readouterr().out and out.exists()


def test_cli_check_exit_codes(tmp_path, dump_dir, capsys):
    warn = tmp_path / "warn.json"
    warn.write_text(json.dumps({"dump": {"dump_list": [{"model_name": "a.om"}], "dump_path": dump_dir}}))
    assert main(["acl-json", "check", str(warn)]) == 0
    out = capsys.readouterr().out
    assert "warning: dump.dump_list[0].model_name" in out and "valid: 0 errors, 1 warning" in out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"dump": {"dump_list": [{"model_name": "a"}, {"model_name": "a"}],
                                        "dump_path": dump_dir, "dump_mode": "x"}}))
    assert main(["acl-json", "check", str(bad)]) == 2
    out = capsys.readouterr().out
    assert "dump.dump_list[1].model_name" in out and "dump.dump_mode" in out and "invalid: 2 errors" in out
    assert main(["acl-json", "check", str(bad), "--format", "json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["errors"] == 2 and {p["path"] for p in report["problems"]} == {
        "dump.dump_list[1].model_name", "dump.dump_mode"}
    rel = tmp_path / "rel.json"
    rel.write_text(json.dumps({"dump": {"dump_list": [{"model_name": "a"}], "dump_path": "dump"}}))
    assert main(["acl-json", "check", str(rel), "--cwd", str(tmp_path)]) == 0
    assert main(["acl-json", "check", str(rel), "--cwd", str(tmp_path / "dump")]) == 2
    assert main(["acl-json", "check", str(rel), "--cwd", str(tmp_path / "dump"), "--remote"]) == 0
    assert main(["acl-json", "check", str(tmp_path / "absent.json")]) == 2


# -- SigmaStar -------------------------------------------------------------------------------------------------
def test_sigmastar_config(tmp_path, capsys):
    text = new_sigmastar_config({"dumpasstring": True, "dequantFixed": False}, "/home/user")
    assert text.splitlines() == ["dumpTensor", "eliminateGarbage", "#dequantFixed", "dumpasstring",
                                 "#disableDomainFuseOps", "path=/home/user"]
    switches, path = read_sigmastar_config(text)
    assert switches == {"dumpTensor": True, "eliminateGarbage": True, "dequantFixed": False, "dumpasstring": True,
                        "disableDomainFuseOps": False} and path == "/home/user"
    assert read_sigmastar_config(new_sigmastar_config())[1] is None
    assert len(("/" + "a" * 121).encode()) == 122
    new_sigmastar_config(path="/" + "a" * 121)
    with pytest.raises(ConfigError, match="123 bytes"):
        new_sigmastar_config(path="/" + "a" * 122)
    with pytest.raises(ConfigError, match="absolute"):
        new_sigmastar_config(path="home/user")
    with pytest.raises(ConfigError, match="did you mean 'dumpTensor'"):
        new_sigmastar_config({"dumptensor": False})
    out = tmp_path / "DebugConfig.txt"
    assert main(["acl-json", "sigmastar", "-o", str(out), "--disable", "dumpTensor", "--path", "/data"]) == 0
    assert out.read_text().splitlines()[0] == "#dumpTensor"
    assert main(["acl-json", "sigmastar", "-o", str(out)]) == 2
