"""`dumpcmp debug-config`: write or check SigmaStar's DebugConfig.txt, the dump switches of the SDK's simulator
(the sibling of `dumpcmp acl-json` for Ascend). `new` writes one from options; `check` reads one and reports the
first error with its file and line (exit 2), or the settings and any warnings (exit 0)."""

from __future__ import annotations

import argparse
import os
import sys

EPILOG = """\
switches (new): without any, the SDK's recommended set: dumpTensor, eliminateGarbage and dequantFixed on,
dumpasstring and disableDomainFuseOps off. With any, exactly those given are on.
--path: the folder the simulator writes sigma_outtensor_dump.bin to; a relative one is made absolute here; at
most 122 bytes (the simulator's limit); without it the simulator writes to $HOME.

examples:
  dumpcmp debug-config new --path /home/user/dump                       # the recommended switches
  dumpcmp debug-config new --dump-tensor --disable-domain-fuse-ops --path /data/d -o DebugConfig.txt
  dumpcmp debug-config check DebugConfig.txt
"""

_FLAGS = (("--dump-tensor", "dumpTensor", "dump every layer's output (the main switch)"),
          ("--eliminate-garbage", "eliminateGarbage", "leave out alignment padding"),
          ("--dequant-fixed", "dequantFixed", "a fixed model's values as float (dequantised)"),
          ("--dump-as-string", "dumpasstring", "text dump instead of binary"),
          ("--disable-domain-fuse-ops", "disableDomainFuseOps", "no layer fusion when the calibrator converts "
                                                                "(every layer dumped)"))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("debug-config", help="write or check SigmaStar's DebugConfig.txt", description=__doc__)
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    new = verbs.add_parser("new", help="write a DebugConfig.txt", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           description="Write SigmaStar's DebugConfig.txt (a switch a line, '#' in front: off; "
                                       "path= the output folder).")
    for flag, name, what in _FLAGS:
        new.add_argument(flag, dest="switches", action="append_const", const=name, help=f"{name}: {what}")
    new.add_argument("--path", default=None, metavar="DIR", help="the simulator's output folder (absolute)")
    new.add_argument("-o", "--output", default="DebugConfig.txt", help="file to write (default DebugConfig.txt; "
                                                                       "- for stdout)")
    new.add_argument("--force", action="store_true", help="replace an existing file")
    new.set_defaults(run=run_new)
    check = verbs.add_parser("check", help="check a DebugConfig.txt; exit 2 on an error",
                             description="Check a DebugConfig.txt: unknown or repeated switches, the path rules "
                                         "(absolute, at most 122 bytes). The first error is reported with its line "
                                         "(exit 2); otherwise the settings and any warnings (exit 0).")
    check.add_argument("file")
    check.set_defaults(run=run_check)


def run_new(args: argparse.Namespace) -> int:
    from dumpcmp.device.acljson import SIGMASTAR_SWITCHES, new_sigmastar_config, write_sigmastar_config

    switches = None
    if args.switches:
        switches = {name: name in args.switches for name in SIGMASTAR_SWITCHES}
    path = args.path
    if path:
        path = os.path.abspath(path)  # the simulator needs it absolute; the rules apply to what is written
    text = new_sigmastar_config(switches, path)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = write_sigmastar_config(text, args.output, force=args.force)
    print(f"wrote {out}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from dumpcmp.device.debugconfig import check_debug_config

    config = check_debug_config(args.file)
    for warning in config.warnings:
        print(warning)
    on = [name for name, value in config.switches.items() if value]
    print(f"{args.file}: valid: on: {', '.join(on) or 'none'}; path: {config.path or '$HOME'}")
    return 0
