"""Writing the user's files safely: the one mechanism every file dumpcmp writes goes through.

In: a target path (or folder) and a function that writes the content. Out: the target, whole, or nothing at all.

- Temporary files and folders are created exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``, ``mkdir``) in the target's
  own folder under unpredictable names ``.dumpcmp-{host}-{pid}-{random}.{hint}.tmp``: a symlink planted there is
  never followed, and a name cannot be guessed ahead.
- The final name is taken without replacing anything (``renameat2(RENAME_NOREPLACE)``, else ``link``), so of two
  concurrent runs one wins and the other gets a clear error. With ``force`` the name is replaced by ``rename``,
  which replaces a symlink itself, never the file it points to.
- Anything raised (Ctrl-C, and SIGTERM / SIGHUP once `install_signal_cleanup` ran) removes the temporary files; a
  temporary of a killed run (SIGKILL, power loss) carries its host and PID and is removed by the next run that writes
  in that folder once that process is gone.
- A set of files (`file_set`), a whole folder (`atomic_folder`) or a new folder among others (`new_folder_in`, a
  run's time folder with the files that go with it) is built in a private temporary folder and moved into place at
  the end: all of it or none.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import fcntl
import hashlib
import importlib.machinery
import os
import secrets
import shutil
import signal
import socket
import stat
import sys
import threading
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

from dumpcmp.errors import ConfigError, DumpcmpError

PREFIX = ".dumpcmp-"
SUFFIX = ".tmp"
_HOST = hashlib.sha1(socket.gethostname().encode("utf-8", "surrogateescape")).hexdigest()[:8]
_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

_live: set[str] = set()  # temporaries of this process, removed on the way out whatever happens
_live_lock = threading.Lock()
_swept: set[str] = set()  # folders already cleared of stale temporaries by this process


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C so every `finally` removes its temporaries."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


# ---- temporaries -----------------------------------------------------------------------------------------------

def _folder_of(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def _hint(name: str) -> str:
    """A short readable piece of the target name (never more than 40 bytes, never a separator)."""
    raw = os.fsencode(name)[:40]
    return os.fsdecode(raw).replace("/", "_")


def temp_name(hint: str = "") -> str:
    """A fresh temporary name: recognisable prefix and suffix, this host and PID, 128 random bits."""
    return f"{PREFIX}{_HOST}-{os.getpid()}-{secrets.token_hex(16)}.{_hint(hint)}{SUFFIX}"


def is_temp_name(name: str) -> bool:
    return name.startswith(PREFIX) and name.endswith(SUFFIX)


def _register(path: str) -> None:
    with _live_lock:
        _live.add(path)


def _forget(path: str) -> None:
    with _live_lock:
        _live.discard(path)


def _remove(path: str) -> None:
    """Remove a file, symlink or folder tree without following a symlink; silent when already gone."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def discard(path: str | os.PathLike[str]) -> None:
    """Remove a temporary made by `create_temp_file` / `create_temp_folder` (idempotent)."""
    p = os.fspath(path)
    _remove(p)
    _forget(p)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def sweep_stale(folder: str | os.PathLike[str]) -> list[str]:
    """Remove the temporaries a killed dumpcmp run left in `folder` (this host, process gone). Returns them.

    A temporary of another host, or of a process still running, is left alone: it is ignored anyway, as no name
    can collide with it."""
    removed: list[str] = []
    try:
        entries = os.listdir(folder)
    except OSError:
        return removed
    for name in entries:
        if not is_temp_name(name):
            continue
        parts = name[len(PREFIX):].split("-", 2)
        if len(parts) < 3 or parts[0] != _HOST or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or _alive(pid):
            continue
        path = os.path.join(folder, name)
        _remove(path)
        removed.append(path)
    return removed


def _sweep_once(folder: Path) -> None:
    key = os.path.abspath(folder)
    if key not in _swept:
        _swept.add(key)
        sweep_stale(folder)


def _check_folder(folder: Path, path: Path) -> None:
    if not folder.is_dir():
        raise DumpcmpError(f"{path}: the folder {folder} does not exist")


def create_temp_file(folder: str | os.PathLike[str], hint: str = "") -> tuple[int, str]:
    """A new, empty temporary file in `folder`: (file descriptor open for writing, path). Never follows a link."""
    folder = Path(folder)
    _sweep_once(folder)
    while True:
        path = os.path.join(folder, temp_name(hint))
        _register(path)  # before it exists: a signal right after the open must find it registered
        try:
            fd = os.open(path, _OPEN_FLAGS, 0o666)
        except OSError as error:  # not made here (an existing one is not ours to remove)
            _forget(path)
            if isinstance(error, FileExistsError):  # pragma: no cover - 128 random bits
                continue
            raise
        return fd, path


def create_temp_folder(parent: str | os.PathLike[str], hint: str = "") -> str:
    """A new private (0700) temporary folder in `parent`."""
    parent = Path(parent)
    _sweep_once(parent)
    while True:
        path = os.path.join(parent, temp_name(hint))
        _register(path)  # before it exists: a signal right after the mkdir must find it registered
        try:
            os.mkdir(path, 0o700)
        except OSError as error:  # not made here (an existing one is not ours to remove)
            _forget(path)
            if isinstance(error, FileExistsError):  # pragma: no cover
                continue
            raise
        return path


# ---- taking the final name -------------------------------------------------------------------------------------

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _renameat2 = _libc.renameat2
    _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    _renameat2.restype = ctypes.c_int
except (OSError, AttributeError):  # pragma: no cover - not glibc 2.28+
    _renameat2 = None


def _rename_noreplace(src: str, dst: str) -> None:
    """Move `src` to `dst`; FileExistsError when `dst` exists (a file, folder or symlink), atomically."""
    if _renameat2 is not None:
        if _renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), dst)
    if not os.path.isdir(src):
        os.link(src, dst, follow_symlinks=False)  # EEXIST when taken: atomic on every POSIX file system
        os.unlink(src)
        return
    if os.path.lexists(dst):  # pragma: no cover - a folder on a file system without RENAME_NOREPLACE
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
    os.rename(src, dst)  # pragma: no cover


def _exchange(a: str, b: str) -> bool:
    """Swap two folders atomically (``renameat2(RENAME_EXCHANGE)``): True when done; False when `b` is not a folder
    (or is a link) or the system cannot (then the caller moves the old one aside and renames)."""
    if _renameat2 is None or not os.path.isdir(b) or os.path.islink(b):
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), b)


def exists_error(taken: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], what: str = "file") -> ConfigError:
    """The one message for outputs already on disk when --force was not given: the first, how many more, the way
    out. Every writer and command that refuses to replace a user's file says it this way."""
    paths = [taken] if isinstance(taken, (str, os.PathLike)) else list(taken)
    more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
    return ConfigError(f"{os.fspath(paths[0])}: already exists{more}; nothing was written (choose another name or "
                       f"use --force, force=True in Python, to replace the {what})")


def publish(tmp: str | os.PathLike[str], path: str | os.PathLike[str], *, force: bool, what: str = "file") -> Path:
    """Give the finished temporary `tmp` its final name `path`. Without `force` an existing `path` (even one that
    appeared a moment ago) is an error and `tmp` is removed; with `force` it is replaced (a symlink itself)."""
    tmp, path = os.fspath(tmp), Path(path)
    try:
        if force:
            if os.path.isdir(path) and not os.path.islink(path):
                raise DumpcmpError(f"{path}: is a folder; not replaced by the {what}")
            os.replace(tmp, path)
        else:
            try:
                _rename_noreplace(tmp, os.fspath(path))
            except FileExistsError:
                raise exists_error(path, what) from None
    finally:
        discard(tmp)
    return path


@contextlib.contextmanager
def write_errors_named(target: str | os.PathLike[str], what: str = "file") -> Iterator[None]:
    """An OSError that names no file (a full disk, a quota, a file-size limit: raised by a write on an open file)
    becomes a DumpcmpError naming `target` and the reason: one line, exit code 2 in the CLI."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or isinstance(e, (BrokenPipeError, InterruptedError)):
            raise
        raise DumpcmpError(f"{os.fspath(target)}: cannot write the {what}: {e.strerror or e}") from None


# ---- whole files -----------------------------------------------------------------------------------------------

@contextlib.contextmanager
def open_atomic(path: str | os.PathLike[str], *, force: bool = True, what: str = "file",
                mode: str = "wb", encoding: str | None = None, errors: str | None = None,
                newline: str | None = None) -> Iterator[IO]:
    """``with open_atomic(path) as f: ...``: `f` is a temporary beside `path` that takes `path`'s name when the
    block ends without an exception, and is removed otherwise."""
    path = Path(path)
    folder = _folder_of(path)
    _check_folder(folder, path)
    if not force and os.path.lexists(path):
        raise exists_error(path, what)
    fd, tmp = create_temp_file(folder, path.name)
    try:
        with write_errors_named(path, what):
            with os.fdopen(fd, mode, encoding=encoding, errors=errors, newline=newline) as f:
                yield f
        publish(tmp, path, force=force, what=what)
    finally:
        discard(tmp)


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object], *, force: bool = True,
                 what: str = "file") -> Path:
    """Call `write(f)` on a temporary file beside `path`, then give it `path`'s name.

    An error or Ctrl-C (anything raised) removes the temporary file and leaves `path` as it was. Without `force`, an
    existing `path` is an error (checked before anything is written, and again atomically at the end).
    """
    with open_atomic(path, force=force, what=what) as f:
        write(f)
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str, *, force: bool = True, what: str = "file") -> Path:
    """`atomic_write` of a text (UTF-8, newlines as given)."""
    return atomic_write(path, lambda f: f.write(text.encode("utf-8", "surrogateescape")), force=force, what=what)


def _private_beside(path: str | os.PathLike[str], force: bool, what: str) -> tuple[Path, Path, str]:
    """The checks every single-name writer starts with, then its private temporary folder beside `path`:
    (path, its folder, the private folder)."""
    path = Path(path)
    folder = _folder_of(path)
    _check_folder(folder, path)
    if not force and os.path.lexists(path):
        raise exists_error(path, what)
    return path, folder, create_temp_folder(folder, path.name)


def atomic_write_path(path: str | os.PathLike[str], write: Callable[[str], object], *, force: bool = True,
                      what: str = "file") -> Path:
    """For writers that need a path, not a file object (the C++ core, NumPy savers): `write(p)` writes the file
    `p` inside a private temporary folder beside `path`; that file then takes `path`'s name."""
    path, _, private = _private_beside(path, force, what)
    try:
        inner = os.path.join(private, "out")
        with write_errors_named(path, what):
            write(inner)
        if not os.path.isfile(inner) or os.path.islink(inner):
            raise DumpcmpError(f"{path}: the {what} was not written")
        publish(inner, path, force=force, what=what)
    finally:
        discard(private)
    return path


# ---- sets of files and folders -----------------------------------------------------------------------------------

@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive lock on `folder` among dumpcmp processes (flock on the folder itself; released on exit)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class FileSet:
    """Files built in a private temporary folder, moved into `folder` together by `file_set`."""

    def __init__(self, folder: Path, private: str) -> None:
        self.folder = folder
        self.private = private
        self.names: list[str] = []
        self.dropped: list[str] = []

    def drop(self, name: str) -> None:
        """With `force`: remove `folder/name` when the set is published (a file of an older, larger set), in the same
        all-or-nothing step."""
        if name not in self.dropped:
            self.dropped.append(name)

    def path(self, name: str) -> str:
        """Where to write the file that will be `folder/name` (a path inside the private folder)."""
        if not name or "/" in name or name in (".", ".."):
            raise DumpcmpError(f"{name!r} is not a file name")
        if name not in self.names:
            self.names.append(name)
        return os.path.join(self.private, name)

    def final(self, name: str) -> str:
        return os.path.join(self.folder, name)


def publish_together(moves: Sequence[tuple[str, str]], removals: Sequence[str] = (), what: str = "files") -> None:
    """Move each finished temporary `src` to its final name `dst`, and remove `removals`, as one step: the names
    that existed are first moved aside, then the new files take their names; anything raised on the way (a full
    disk, a name taken meanwhile) removes what was placed and puts the old files back. Call it inside
    `signals_deferred` (and `folder_lock`) so that no signal cuts it in half."""
    aside: list[tuple[str, str]] = []
    placed: list[str] = []
    try:
        for dst in [d for _, d in moves] + list(removals):
            if not os.path.lexists(dst):
                continue
            if os.path.isdir(dst) and not os.path.islink(dst):
                raise DumpcmpError(f"{dst}: is a folder; not replaced by the {what}")
            backup = os.path.join(_folder_of(Path(dst)), temp_name(os.path.basename(dst)))
            _register(backup)
            os.rename(dst, backup)
            aside.append((dst, backup))
        for src, dst in moves:
            try:
                _rename_noreplace(src, dst)
            except FileExistsError:
                raise exists_error(dst, what) from None
            placed.append(dst)
    except BaseException:
        for p in placed:
            _remove(p)
        for dst, backup in reversed(aside):
            with contextlib.suppress(OSError):
                os.rename(backup, dst)
            _forget(backup)
        raise
    for _, backup in aside:
        discard(backup)


@contextlib.contextmanager
def file_set(folder: str | os.PathLike[str], *, force: bool = False, what: str = "files") -> Iterator[FileSet]:
    """``with file_set(folder) as s: write(s.path(name)) ...``: the files appear in `folder` all together at the end
    of the block, or none of them (an exception, an existing name without `force`, a concurrent run that took a
    name first). Concurrent sets into one folder are serialised by `folder_lock`."""
    folder = Path(folder)
    _check_folder(folder, folder / "x")
    private = create_temp_folder(folder, what)
    try:
        s = FileSet(folder, private)
        with write_errors_named(folder, what):
            yield s
        written = [n for n in s.names if os.path.lexists(os.path.join(private, n))]
        with folder_lock(folder), signals_deferred():
            if not force:
                taken = [s.final(n) for n in written if os.path.lexists(s.final(n))]
                if taken:
                    raise exists_error(taken, what)
            moves = [(os.path.join(private, n), s.final(n)) for n in written]
            publish_together(moves, [s.final(n) for n in s.dropped if n not in written] if force else [], what)
    finally:
        discard(private)


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike[str], *, force: bool = False, what: str = "folder") -> Iterator[Path]:
    """``with atomic_folder(out) as tmp: ...``: build the folder in `tmp` (beside `out`); it becomes `out` at the end,
    whole. Without `force` an existing `out` is an error; with it the old folder (or the link) is replaced."""
    path, parent, private = _private_beside(path, force, what)
    try:
        os.chmod(private, 0o777 & ~_umask())
        with write_errors_named(path, what):
            yield Path(private)
        with signals_deferred():
            if force and _exchange(private, os.fspath(path)):
                return  # `private` now holds the old folder, removed below: `path` was never missing or partial
            old = None
            if force and os.path.lexists(path):
                old = os.path.join(parent, temp_name(path.name))
                _register(old)
                os.rename(path, old)  # the link itself when `path` is a symlink
            try:
                _rename_noreplace(private, os.fspath(path))
            except BaseException as e:
                if old is not None:
                    with contextlib.suppress(OSError):
                        os.rename(old, path)  # the old folder back
                    _forget(old)
                if isinstance(e, FileExistsError):
                    raise exists_error(path, what) from None
                raise
            _forget(private)
            if old is not None:
                discard(old)
    finally:
        discard(private)


class NewFolder:
    """A folder that `new_folder_in` builds privately (`path`), and the files published with it (`add_file`)."""

    def __init__(self, private: str) -> None:
        self.path = Path(private)
        self.final: Path | None = None  # its name once published
        self.files: list[tuple[str, str]] = []  # (temporary, final name)

    def add_file(self, final: str | os.PathLike[str], data: bytes) -> None:
        """`final` (an existing file is replaced) gets `data` when the folder is published, in the same step."""
        final = Path(final)
        _check_folder(_folder_of(final), final)
        fd, tmp = create_temp_file(_folder_of(final), final.name)
        self.files.append((tmp, os.fspath(final)))
        with os.fdopen(fd, "wb") as f, write_errors_named(final):
            f.write(data)

    def published(self, inside: str | os.PathLike[str]) -> Path:
        """Where a path inside `path` ended up once published."""
        assert self.final is not None
        return self.final / os.path.relpath(inside, self.path)


@contextlib.contextmanager
def new_folder_in(parent: str | os.PathLike[str], names: Iterable[str], *, what: str = "folder") -> Iterator[NewFolder]:
    """``with new_folder_in(parent, names) as f: build in f.path; f.add_file(...)``: at the end of the block the
    folder takes the first of `names` still free in `parent`, and the added files take their names, in one step
    (no signal cuts it in half). Before that nothing of it is visible; after an error or a signal, nothing is.
    For runs that add a new folder to a folder other runs share (a dump path's time folders)."""
    parent = Path(parent)
    _check_folder(parent, parent / "x")
    private = create_temp_folder(parent, what.replace(" ", "_"))
    new = NewFolder(private)
    try:
        with write_errors_named(parent, what):
            yield new
        os.chmod(private, 0o777 & ~_umask())
        with folder_lock(parent), signals_deferred():
            tried = []
            for name in names:
                if not os.path.lexists(parent / name):
                    break
                tried.append(name)
            else:
                span = f" ({tried[0]} to {tried[-1]})" if tried else ""
                raise ConfigError(f"{parent}: every name for a new {what} is taken{span}; use another folder")
            publish_together([(private, os.fspath(parent / name)), *new.files], (), what)
            _forget(private)
            new.final = parent / name
    finally:
        discard(private)
        for tmp, _ in new.files:
            discard(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---- signals -----------------------------------------------------------------------------------------------------

def _cleanup_live() -> None:
    with _live_lock:
        paths = list(_live)
        _live.clear()
    for p in paths:
        _remove(p)


_received: list[int] = []  # the signals this process's handlers met, in order


def _on_signal(signum: int, frame: object) -> None:
    _received.append(signum)
    raise Terminated(signum)


def _on_sigint(signum: int, frame: object) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


_previous_unraisable_hook: Callable[[Any], object] = sys.unraisablehook


def _on_unraisable(unraisable: Any) -> None:
    """A signal's exception raised where Python cannot let it propagate (a weakref callback of the import system, a
    `__del__`) is only printed as "Exception ignored in ...", and the command then went on as if no signal had come
    (SIGTERM while a module was imported: exit 0 and a traceback, 1 in ~200 interrupts at start-up). The signal is
    sent again instead, to the main thread, from another thread once this hook has returned (sent from here, its
    handler would run inside the hook and be ignored again), and unwinds where it lands next."""
    error = unraisable.exc_value
    if isinstance(error, KeyboardInterrupt) and (isinstance(error, Terminated) or _received):
        signum = error.signum if isinstance(error, Terminated) else int(signal.SIGINT)
        again = threading.Timer(0.001, signal.pthread_kill, (threading.main_thread().ident, signum))
        again.daemon = True
        again.start()
        return
    _previous_unraisable_hook(unraisable)


def signals_met() -> int:
    """How many signals this process's handlers have met so far: a mark for `interrupted_by(since=...)`."""
    return len(_received)


def interrupted_by(error: BaseException, *, since: int = 0,
                   kinds: tuple[type[BaseException], ...] = (ImportError, RuntimeError)) -> int | None:
    """The signal behind `error` (SIGINT 2, SIGTERM 15, SIGHUP 1), or None: an interrupt itself, one in its cause or
    context chain, or, for an error of `kinds`, a signal met since the mark `since` (`signals_met`). Code that loses
    a signal's exception turns it into another error without a chain: a module's import cut by a signal surfaces as
    its ImportError (NumPy's "PyCapsule_Import could not import module"), a descriptor's __set_name__ wraps it in a
    RuntimeError, and NumPy's `fromfile` reports a signal inside its `os.PathLike` check as a TypeError ("expected
    str, bytes or os.PathLike object, not BufferedReader")."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, Terminated):
            return e.signum
        if isinstance(e, KeyboardInterrupt):
            return int(signal.SIGINT)
        e = e.__cause__ or e.__context__
    if isinstance(error, kinds) and len(_received) > since:
        return _received[-1]
    return None


_DEFERRED = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP arriving during the block take effect when it ends (their handler then runs, or
    the default action is taken again): a publication in several steps is never cut in half. Main thread only
    (elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old: dict[int, object] = {}
    for sig in _DEFERRED:
        try:
            old[sig] = signal.signal(sig, lambda signum, frame: pending.append(signum))
        except (ValueError, OSError):  # pragma: no cover
            pass
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        if pending:
            handler = old.get(pending[0])
            if callable(handler):
                handler(pending[0], None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), pending[0])


# every extension module created since install_signal_cleanup: none is ever deallocated (see _import_safely)
_extension_modules: list[object] = []


def _import_safely() -> None:
    """No signal's exception is raised inside an extension module's import, and no extension module created is ever
    deallocated. Two crashes otherwise, 1 in a few hundred interrupts while the command imports onnx: an exception
    raised between the module's creation and its execution (the handler runs as soon as the C code returns) drops the
    created module, whose deallocation dereferences a pointer its execution would have set (onnx 1.23's
    onnx_cpp2py_export, pybind11 3's multi-phase initialisation: SIGSEGV, no message); one raised from Python code the
    C initialisation runs (pybind11 defining its classes) is a C++ exception ending in std::terminate (SIGABRT), or
    is swallowed there (the signal lost, exit 0). Creating and executing an extension module (ExtensionFileLoader,
    this process only) therefore defer SIGINT, SIGTERM and SIGHUP to their end (`signals_deferred`: milliseconds) and
    keep the module referenced, so that the signal unwinds in the import system's Python code with nothing to free."""
    loader = importlib.machinery.ExtensionFileLoader
    if getattr(loader.create_module, "signal_safe", False):
        return
    create, execute = loader.create_module, loader.exec_module

    def create_module(self: Any, spec: Any) -> Any:
        with signals_deferred():
            module = create(self, spec)
            _extension_modules.append(module)  # before a deferred signal unwinds at the end of the block
        return module

    def exec_module(self: Any, module: Any) -> None:  # the module is in _extension_modules: kept even if this fails
        with signals_deferred():
            execute(self, module)

    create_module.signal_safe = True  # type: ignore[attr-defined]
    loader.create_module, loader.exec_module = create_module, exec_module  # type: ignore[method-assign]


def install_signal_cleanup() -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C (so every temporary is removed on the way out), never inside an extension
    module's import (`_import_safely`). For the CLI; a program embedding dumpcmp keeps its own handlers and import
    system unless it calls this. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return
    _import_safely()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _on_signal)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)  # Python's own, but remembered (interrupted_by)
    global _previous_unraisable_hook
    if sys.unraisablehook is not _on_unraisable:
        _previous_unraisable_hook, sys.unraisablehook = sys.unraisablehook, _on_unraisable


atexit.register(_cleanup_live)


def remove_leftovers() -> None:
    """Remove every temporary this process still holds (called on exit by the CLI)."""
    _cleanup_live()


# ---- output folders a run creates --------------------------------------------------------------------------------

def make_folder(path: str | os.PathLike[str], created: list[str] | None = None) -> list[str]:
    """``mkdir -p path``; returns the folders this call created (outermost first) for `remove_empty`, appended to
    `created` (when given) as each is made: a signal never falls between a folder's creation and its record, so a
    caller that holds the list before the call removes whatever was made."""
    created = [] if created is None else created
    missing: list[str] = []
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        missing.append(p)
        p = os.path.dirname(p)
    for folder in reversed(missing):
        with signals_deferred():
            try:
                os.mkdir(folder)
            except FileExistsError:
                continue
            created.append(folder)
    if not os.path.isdir(path):
        raise DumpcmpError(f"{path}: exists and is not a folder")
    return created


def remove_empty(created: list[str]) -> None:
    """Remove the folders `make_folder` created that are still empty (innermost first); a folder that holds
    anything, or that existed before, is left alone."""
    for folder in reversed(created):
        try:
            os.rmdir(folder)
        except OSError:
            pass


@contextlib.contextmanager
def made_folder(path: str | os.PathLike[str]) -> Iterator[list[str]]:
    """``with made_folder(out): ...``: `out` created if missing (parents too); a folder created here and still empty
    when the block ends (an error, a signal, nothing published) is removed. Yields the list of created folders, to
    which the block may add the subfolders it makes."""
    created: list[str] = []
    try:
        make_folder(path, created)
        yield created
    finally:
        remove_empty(created)
