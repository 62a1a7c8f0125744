"""A strict UTF-8 locale (en_US.UTF-8) built by the tests themselves, for running dumpcmp the way a user's terminal
does: under it Python's stdout and stderr refuse text that is not UTF-8 (errors='strict'), where C.UTF-8, the usual
locale of CI machines, hides the problem (Python then writes with surrogateescape).

`environment(folder)` compiles the locale into `folder` with localedef (about a second) and returns this process's
environment with the locale selected (LOCPATH, LC_ALL; PYTHONIOENCODING and PYTHONUTF8 dropped), after checking in
a child process that Python's stdout is strict there; None with the reason when it cannot (no localedef, no en_US
source), for a pytest.skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

LOCALE = "en_US.UTF-8"


def environment(folder: str | os.PathLike[str]) -> tuple[dict[str, str] | None, str]:
    """(the environment for a child process, "") or (None, why not)."""
    localedef = shutil.which("localedef")
    if localedef is None:
        return None, "localedef is not installed (Debian: apt-get install libc-bin locales)"
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / LOCALE
    if not target.exists():
        done = subprocess.run([localedef, "-i", "en_US", "-f", "UTF-8", str(target)], capture_output=True,
                              text=True, timeout=120)
        if done.returncode not in (0, 1) or not target.exists():  # 1: warnings only, the locale is written
            return None, f"localedef could not build {LOCALE}: {done.stderr.strip()[-300:]}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8")}
    env.update(LOCPATH=str(folder), LC_ALL=LOCALE)
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.stdout.encoding, sys.stdout.errors)"],
                           capture_output=True, text=True, env=env, timeout=60)
    if probe.stdout.split() != ["utf-8", "strict"]:
        return None, f"Python's stdout under the built {LOCALE} is {probe.stdout.strip()!r}, not 'utf-8 strict'"
    return env, ""
