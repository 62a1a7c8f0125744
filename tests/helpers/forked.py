"""Run a function in a forked child (to change its uids, say) and get back what it returns, as JSON."""

from __future__ import annotations

import json
import os
import traceback
from typing import Any, Callable


def in_child(fn: Callable[[], Any]) -> Any:
    """`fn()` in a forked child, which never returns into the caller; its JSON-able result, or AssertionError when the
    child failed."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            os.write(write, json.dumps(fn()).encode())
            code = 0
        except BaseException:
            traceback.print_exc()  # (the caller's pytest shows the child's standard error)
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    status = os.waitpid(pid, 0)[1]
    if status != 0:
        raise AssertionError(f"the child failed (wait status {status})")
    return json.loads(data)
