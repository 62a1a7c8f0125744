"""`dumpcmp acl-json`: write the dump configuration file (acl.json) an Ascend application passes to aclInit or
aclmdlSetDump, check one against every rule of the documentation, or write SigmaStar's DebugConfig.txt."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, Sequence

from dumpcmp.errors import ConfigError

NEW_EPILOG = """\
models and layers:
  --model NAME                 dump every op of model NAME (the model file name without extension)
  --model NAME:OP1,OP2         dump only these ops of NAME (split at the first ':' and at commas)
  --model NAME --layer OP ...  the same, one op per --layer (for op names with commas); --layer adds to the
                               --model before it
watcher scene (sets --scene watcher):
  --watcher A,B:C,D            after ops A and B run, dump the outputs of C and D (layer A,B; watcher_nodes C,D)
  --watcher :C,D               no layer: check C and D after every op

examples:
  dumpcmp acl-json new -o acl.json --model resnet50 --path /home/user/dump
  dumpcmp acl-json new --model a --model b:conv1,pool1 --path dump --mode all
  dumpcmp acl-json new --op-switch on --path dump            # single-operator dump: empty dump_list
  dumpcmp acl-json new --scene aic_err_brief_dump            # exception dump
  dumpcmp acl-json new --debug on --path dump                # overflow/underflow dump
"""


class _ModelAction(argparse.Action):
    """--model and --layer share one ordered list so that each --layer attaches to the --model before it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        models: list[list[Any]] = getattr(namespace, "models", None) or []
        if option_string == "--layer":
            if not models:
                parser.error("--layer needs a --model before it")
            models[-1][1] = (models[-1][1] or []) + [values]
        else:
            name, sep, ops = str(values).partition(":")
            if not name:
                parser.error(f"--model {values!r}: the model name is empty")
            layers = [op.strip() for op in ops.split(",") if op.strip()] if sep else None
            if sep and not layers:
                parser.error(f"--model {values!r}: no op names after ':'")
            models.append([name, layers])
        namespace.models = models


def _watcher(text: str) -> tuple[list[str] | None, list[str]]:
    layer_part, sep, node_part = text.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r}: write LAYER_OPS:WATCHED_OPS, e.g. A,B:C,D or :C,D")
    nodes = [n.strip() for n in node_part.split(",") if n.strip()]
    if not nodes:
        raise argparse.ArgumentTypeError(f"{text!r}: no watched ops after ':'")
    layers = [n.strip() for n in layer_part.split(",") if n.strip()]
    return (layers or None), nodes


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("acl-json", help="write or check an acl.json dump configuration", description=__doc__)
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    new = verbs.add_parser("new", help="write a valid acl.json from options",
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=NEW_EPILOG,
                           description="Write a valid acl.json. The result is checked against every rule before "
                                       "it is written; a dump_path that does not exist here is only a warning.")
    new.add_argument("-o", "--output", default="acl.json", help="file to write (default acl.json; - for stdout)")
    new.add_argument("--force", action="store_true", help="replace an existing file")
    new.add_argument("--model", action=_ModelAction, dest="models", metavar="NAME[:OP,...]", default=[],
                     help="a model to dump (repeatable); see below")
    new.add_argument("--layer", action=_ModelAction, dest="models", metavar="OP",
                     help="an op of the --model before it (repeatable)")
    new.add_argument("--path", dest="dump_path", help="dump_path: folder the runtime writes to (absolute, or "
                     "relative to the application's working directory)")
    new.add_argument("--mode", dest="dump_mode", choices=("input", "output", "all"), help="default output")
    new.add_argument("--op-switch", dest="dump_op_switch", choices=("on", "off"),
                     help="single-operator dump (default off)")
    new.add_argument("--data", dest="dump_data", choices=("tensor", "stats"), help="default tensor")
    new.add_argument("--scene", dest="dump_scene", choices=("aic_err_brief_dump", "aic_err_norm_dump",
                                                            "aic_err_detail_dump", "lite_exception", "watcher"))
    new.add_argument("--debug", dest="dump_debug", choices=("on", "off"), help="overflow/underflow op dump")
    new.add_argument("--watcher", type=_watcher, action="append", default=[], metavar="LAYERS:NODES",
                     help="a watcher entry (repeatable); see below")
    new.add_argument("--cwd", help="resolve a relative --path against this folder when checking (default: here)")
    new.set_defaults(run=run_new)

    check = verbs.add_parser("check", help="check an acl.json against every rule; exit 2 on errors",
                             description="Report every problem of an acl.json at once, each with its JSON path "
                                         "and the fix. Exit code 0 when there is no error (warnings are printed), "
                                         "2 when there are errors.")
    check.add_argument("file")
    check.add_argument("--cwd", help="folder a relative dump_path is resolved against (default: the current one)")
    check.add_argument("--remote", action="store_true",
                       help="dump_path is on another machine: a missing or read-only dump_path is a warning")
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.set_defaults(run=run_check)

    sig = verbs.add_parser("sigmastar", help="write a SigmaStar DebugConfig.txt",
                           description="Write SigmaStar's DebugConfig.txt: switches dumpTensor, eliminateGarbage, "
                                       "dequantFixed (on by default), dumpasstring, disableDomainFuseOps (off by "
                                       "default), and path= (absolute, at most 122 bytes; empty: $HOME).")
    sig.add_argument("-o", "--output", default="DebugConfig.txt", help="file to write (- for stdout)")
    sig.add_argument("--force", action="store_true", help="replace an existing file")
    sig.add_argument("--path", default=None, help="absolute output folder of the simulator")
    sig.add_argument("--enable", action="append", default=[], metavar="SWITCH")
    sig.add_argument("--disable", action="append", default=[], metavar="SWITCH")
    sig.set_defaults(run=run_sigmastar)


def _print_problems(problems: Sequence[Any], where: str) -> None:
    for problem in problems:
        print(f"{where}: {problem}")


def run_new(args: argparse.Namespace) -> int:
    from dumpcmp.device.acljson import acl_json_text, check_acl_json, new_acl_json, write_acl_json

    config = new_acl_json([(name, layers) for name, layers in args.models], dump_path=args.dump_path,
                          dump_mode=args.dump_mode, dump_op_switch=args.dump_op_switch, dump_data=args.dump_data,
                          dump_scene=args.dump_scene, dump_debug=args.dump_debug, watchers=args.watcher)
    problems = check_acl_json(config, cwd=args.cwd, remote=True)
    if args.output == "-":
        sys.stdout.write(acl_json_text(config))
        _print_to_stderr(problems)
        _say_check_differs(problems)
        return 0
    path = write_acl_json(config, args.output, force=args.force)
    print(f"wrote {path}")
    _print_problems(problems, str(path))
    _say_check_differs(problems)
    return 0


def _say_check_differs(problems: Sequence[Any]) -> None:
    """`new` writes a config for a dump_path that may only exist on the device, so a missing or read-only one is a
    warning here; `check` (run where the application runs) makes it an error unless --remote. Say so, so that the
    two never seem to disagree."""
    if any("dump_path" in str(p) and ("does not exist" in str(p) or "writable" in str(p)) for p in problems):
        print("note: `dumpcmp acl-json check` reports this dump_path as an error on this machine; pass it --remote "
              "when the path is on the device", file=sys.stderr)


def _print_to_stderr(problems: Sequence[Any]) -> None:
    for problem in problems:
        print(f"acl.json: {problem}", file=sys.stderr)


def run_check(args: argparse.Namespace) -> int:
    from dumpcmp.device.acljson import ERROR, WARNING, check_acl_json

    problems = check_acl_json(args.file, cwd=args.cwd, remote=args.remote)
    errors = sum(p.severity == ERROR for p in problems)
    warnings = sum(p.severity == WARNING for p in problems)
    if args.format == "json":
        print(json.dumps({"file": args.file, "errors": errors, "warnings": warnings,
                          "problems": [asdict(p) for p in problems]}, indent=2))
    else:
        _print_problems(problems, args.file)
        verdict = "invalid" if errors else "valid"
        print(f"{args.file}: {verdict}: {errors} error{'s' * (errors != 1)}, "
              f"{warnings} warning{'s' * (warnings != 1)}")
    return 2 if errors else 0


def run_sigmastar(args: argparse.Namespace) -> int:
    from dumpcmp.device.acljson import new_sigmastar_config, write_sigmastar_config

    both = set(args.enable) & set(args.disable)
    if both:
        raise ConfigError(f"switch {sorted(both)[0]!r} is both enabled and disabled")
    switches = {name: True for name in args.enable}
    switches.update({name: False for name in args.disable})
    text = new_sigmastar_config(switches, args.path)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    path = write_sigmastar_config(text, args.output, force=args.force)
    print(f"wrote {path}")
    return 0
