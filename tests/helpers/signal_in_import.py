"""A child process's `sitecustomize` (copy this file as sitecustomize.py into a folder put first on its PYTHONPATH):
sends a signal to its own process at an exact point of one extension module's import, where a sweep of delays finds
it 1 in a few hundred times. Set by the environment:

- SIGNAL_IN_IMPORT: the module's name (e.g. onnx.onnx_cpp2py_export); nothing happens without it.
- SIGNAL_NUMBER: the signal (default 15).
- SIGNAL_AT: `created`: the moment the module's creation (`_imp.create_dynamic`, its C code) returned, before it is
  executed; `exec-N`: the N-th audit event the module's execution (its C initialisation, running Python code) raises.

The line "signal-in-import: signal N ..." on stderr says the signal was sent."""

from __future__ import annotations

import os
import sys

_TARGET = os.environ.get("SIGNAL_IN_IMPORT", "")
_SIGNAL = int(os.environ.get("SIGNAL_NUMBER", "15"))
_AT = os.environ.get("SIGNAL_AT", "created")
_state = {"busy": False, "sent": False, "events": 0}


def _send(where: str) -> None:
    _state["sent"] = True
    print(f"signal-in-import: signal {_SIGNAL} {where} of {_TARGET}", file=sys.stderr, flush=True)
    os.kill(os.getpid(), _SIGNAL)  # its handler runs at the interpreter's next check: where the C code returns


def _profile(frame, event, arg):  # noqa: ANN001, ANN202 - sys.setprofile's signature
    if event != "c_return" or getattr(arg, "__name__", "") != "create_dynamic":
        return
    spec = frame.f_locals.get("args", (None,))[0] if frame.f_code.co_name == "_call_with_frames_removed" else None
    if getattr(spec, "name", None) == _TARGET:
        sys.setprofile(None)
        _send("once its creation returned")


def _in_execution() -> bool:
    """The Python code running now was called by the target's C initialisation (importlib's exec_module)."""
    try:
        frame = sys._getframe(2)  # above this function and the hook
    except ValueError:
        return False
    if frame.f_code.co_name != "_call_with_frames_removed" or frame.f_back is None:
        return False
    if frame.f_back.f_code.co_name != "exec_module":
        return False
    module = frame.f_locals.get("args", (None,))[0]
    return getattr(module, "__name__", None) == _TARGET


def _hook(event: str, args: tuple) -> None:
    if _state["busy"] or _state["sent"] or event in ("sys._getframe", "object.__getattr__", "sys.setprofile"):
        return
    _state["busy"] = True
    try:
        if _AT == "created":
            if event == "import" and args[0] == _TARGET and args[1] is None:  # the import statement, before any loader
                sys.setprofile(_profile)
        elif _in_execution():
            _state["events"] += 1
            if f"exec-{_state['events']}" == _AT:
                _send(f"inside the execution (audit event {event})")
    finally:
        _state["busy"] = False


if _TARGET:
    sys.addaudithook(_hook)
