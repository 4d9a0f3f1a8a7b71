"""Writing results: only regular files that are ours are ever replaced.

Every command writes through this module.  An output path is checked before any work
starts (:func:`output_file`, :func:`output_folder`):

- what stands at the path must be a regular file or nothing: a folder where a file is
  expected, a device, a FIFO, a socket or a symbolic link is refused with one line (exit
  status 2), so ``--out /dev/null`` never replaces a device with a file;
- inside an output folder, an existing entry that we would write must be a regular file,
  and a sub-folder that is a symbolic link must lead inside the output folder;
- a missing parent folder is created (as ``mkdir -p`` does), by every command alike; a
  parent that exists and is not a folder is refused;
- an output may not be one of the command's own input files.

A whole file is written to a temporary file in the target's folder and renamed over the
target (:func:`write_text`, :func:`replacing`); the temporary file is removed whatever
happens, so none survives a failed run.  Files that grow as results come (``--resume``
sidecars) are opened by :func:`open_append` without following symbolic links.

Two runs never write one output at once: a command that writes an output folder, or a file it
resumes, holds :func:`run_lock` meanwhile (an exclusive ``flock`` on a lock file beside it, which
the system releases when the process ends, however it ends); a second run is refused in one line.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from ..io.files import input_kind
from ..kernel import OptionError

__all__ = [
    "output_file",
    "output_folder",
    "folder_entry",
    "write_text",
    "write_bytes",
    "write_array",
    "write_arrays",
    "replacing",
    "open_append",
    "created_parents",
    "remove_quietly",
    "run_lock",
]


def _lstat(path: Path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise OptionError(
            f"cannot write to {str(path)!r}: a folder above it exists and is not a "
            "folder; give a path whose parents are folders"
        ) from None
    except OSError as err:
        raise OptionError(f"cannot write to {str(path)!r}: {err.strerror or err}") from None


def _name(flag: str | None, path) -> str:
    return f"{flag} {str(path)!r}" if flag else repr(str(path))


def _refuse_entry(path: Path, flag: str | None, expected: str = "file") -> None:
    """One line unless ``path`` is absent or a regular file."""
    st = _lstat(path)
    if st is None or stat.S_ISREG(st.st_mode):
        return
    kind = input_kind(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        kind += f" (to {os.readlink(path)!r})"
    if stat.S_ISDIR(st.st_mode) and expected == "file":
        raise OptionError(
            f"{_name(flag, path)} is a folder; give the path of a {expected} (e.g. {str(path / 'out.json')!r})"
        )
    raise OptionError(
        f"{_name(flag, path)} is {kind}; lnproofs writes only regular files and replaces "
        "nothing else: give another path"
    )


def created_parents(path, flag: str | None = None) -> Path:
    """Create the folders above ``path`` that are missing (as ``mkdir -p``); refuse a parent that is not a folder."""
    parent = Path(path).parent
    _make_folder(parent, flag, path, "give a path whose parents are folders")
    return parent


def _make_folder(folder: Path, flag: str | None, target, advice: str) -> None:
    """``mkdir -p folder``; one line naming ``target`` when a parent is not a folder or it cannot be made."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OptionError(
            f"cannot write to {_name(flag, target)}: a folder above it exists and is not a folder; {advice}"
        ) from None
    except OSError as err:
        raise OptionError(
            f"cannot write to {_name(flag, target)}: cannot create the folder {str(folder)!r}: {err.strerror or err}"
        ) from None


def output_file(path, flag: str | None = "--out", *, inputs=(), create: bool = True) -> Path:
    """``path`` checked as the target of one output file (see the module's rules); its missing
    parent folders are created when ``create``.  ``inputs``: the command's input files, which
    the output may not be."""
    text = os.fspath(path)
    if not text or text.endswith(("/", os.sep)):
        raise OptionError(f"{_name(flag, text)} names a folder; give the path of a file")
    path = Path(text)
    _refuse_entry(path, flag)
    for item in inputs:
        if item is None:
            continue
        with contextlib.suppress(OSError):
            if path.exists() and Path(item).exists() and os.path.samefile(path, item):
                raise OptionError(
                    f"{_name(flag, path)} is the input file {str(item)!r}; "
                    "give another output path (an input is never overwritten)"
                )
    if create:
        created_parents(path, flag)
    elif not path.parent.is_dir():
        raise OptionError(f"{_name(flag, path)}: its folder {str(path.parent)!r} does not exist")
    return path


def output_folder(path, flag: str | None = "--out", *, create: bool = True) -> Path:
    """``path`` checked as an output folder: a folder (or a link to one) or nothing; created with its
    parents when ``create`` (a command that may still refuse its input checks first, creates later)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        st = _lstat(path)
        raise OptionError(
            f"{_name(flag, path)} is {input_kind(st.st_mode) or 'a file'}, which is not a folder; give a folder path"
        )
    if not path.exists() and _lstat(path) is not None:
        raise OptionError(
            f"{_name(flag, path)} is a symbolic link to nothing ({os.readlink(path)!r}); give a folder path"
        )
    if create:
        _make_folder(path, flag, path, "give a folder path")
    return path


def folder_entry(root, relative, *, folder: bool = False) -> Path:
    """``root/relative``, checked for writing: each sub-folder on the way is a folder inside
    ``root`` (a link leading out of it is refused) and is created when missing; the entry
    itself is a regular file or nothing (``folder``: a folder inside ``root`` or nothing)."""
    root = Path(root)
    top = os.path.realpath(root)
    parts = Path(relative).parts
    here = root
    for index, part in enumerate(parts):
        here = here / part
        last = index == len(parts) - 1
        if last and not folder:
            _refuse_entry(here, None)
            return here
        st = _lstat(here)
        if st is None:
            output_folder(here, None)
            continue
        real = os.path.realpath(here)
        if not os.path.isdir(here):
            raise OptionError(
                f"{str(here)!r} is {input_kind(st.st_mode) or 'a file'}, not a folder; "
                "move it away or give another output folder"
            )
        if os.path.commonpath([top, real]) != top:
            raise OptionError(
                f"{str(here)!r} is a link leading out of the output folder {str(root)!r} "
                f"(to {real!r}); lnproofs writes only inside its output: remove the link"
            )
    return here


def _new_temporary(folder: Path, name: str, flag: str | None):
    """A new file ``.NAME.RANDOM.tmp`` in ``folder``, created exclusively with the usual permissions."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(16):
        tmp = folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
        except OSError as err:
            raise OptionError(f"cannot write {_name(flag, folder / name)}: {err.strerror or err}") from None
    raise OptionError(f"cannot write {_name(flag, folder / name)}: no free temporary name in {str(folder)!r}")


@contextlib.contextmanager
def replacing(path, flag: str | None = None, *, binary: bool = False):
    """A file handle whose content replaces ``path`` when the block ends without an error.

    The content goes to a new temporary file beside the target (created exclusively, so
    no link planted under its name is followed); on success the target is checked again
    (still a regular file or nothing) and the temporary file renamed over it; on any
    error, or on an interruption, the temporary file is removed."""
    path = Path(path)
    _refuse_entry(path, flag)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = _new_temporary(folder, path.name, flag)
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            yield handle
        _refuse_entry(path, flag)  # still ours to replace
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise


def write_text(path, text: str, flag: str | None = None) -> Path:
    """Replace ``path`` by ``text`` (UTF-8), atomically, within the rules above."""
    try:
        with replacing(path, flag) as handle:
            handle.write(text)
    except OSError as err:
        raise OptionError(f"cannot write {_name(flag, path)}: {err.strerror or err}") from None
    return Path(path)


def write_bytes(path, data: bytes, flag: str | None = None) -> Path:
    """Replace ``path`` by ``data``, atomically, within the rules above."""
    return _replace_with(path, flag, lambda handle: handle.write(data))


def write_array(path, array, flag: str | None = None, *, dtype=None, rows: int = 8192) -> Path:
    """Replace ``path`` by a ``.npy`` of ``array`` (no pickled objects), atomically, written straight
    into the file (no copy of the array in memory: a vocabulary's keys are hundreds of MB).  With
    ``dtype``, the rows are converted to it ``rows`` at a time (the header says ``dtype``)."""
    import numpy as np

    if dtype is None or np.dtype(dtype) == array.dtype:
        return _replace_with(path, flag, lambda handle: np.save(handle, array, allow_pickle=False))
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": array.shape}

    def write(handle):
        np.lib.format.write_array_header_1_0(handle, header)
        for a in range(0, len(array), rows):
            handle.write(np.ascontiguousarray(array[a : a + rows], dtype=dtype).tobytes())

    return _replace_with(path, flag, write)


def _replace_with(path, flag: str | None, write) -> Path:
    """``write(handle)`` into the file that replaces ``path`` (:func:`replacing`); an OS error is one line."""
    try:
        with replacing(path, flag, binary=True) as handle:
            write(handle)
    except OSError as err:
        raise OptionError(f"cannot write {_name(flag, path)}: {err.strerror or err}") from None
    return Path(path)


def write_arrays(path, arrays: dict, flag: str | None = None) -> Path:
    """Replace ``path`` by a ``.npz`` of ``arrays`` (name: array), atomically.  The archive is
    made in memory and written at once: written to a file, the zip writer seeks back to each
    member's header, which flushes the file's buffer once per member."""
    return _write_numpy(path, lambda np, buffer: np.savez(buffer, **arrays), flag)


def _write_numpy(path, save, flag: str | None) -> Path:
    import io

    import numpy as np

    buffer = io.BytesIO()
    save(np, buffer)
    return write_bytes(path, buffer.getbuffer(), flag)


def open_append(path, flag: str | None = None, *, truncate: bool = False):
    """A text handle appending to ``path`` (``truncate``: starting it over), created when missing.

    Symbolic links are not followed and a FIFO, device or socket is refused, both checked
    on the opened file itself."""
    path = Path(path)
    _refuse_entry(path, flag)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        raise OptionError(f"cannot write {_name(flag, path)}: {err.strerror or err}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        _refuse_entry(path, flag)
        raise OptionError(f"{_name(flag, path)} is not a regular file; give another path")
    if truncate:
        os.ftruncate(fd, 0)
    return os.fdopen(fd, "a", encoding="utf-8", newline="")


def remove_quietly(path) -> None:
    """Remove ``path`` when it is there (a temporary or partial file of ours)."""
    with contextlib.suppress(OSError):
        os.unlink(path)


#: the lock file of an output folder (a file output has ``<name>.lock`` beside it)
LOCK_NAME = ".lnproofs.lock"


@contextlib.contextmanager
def run_lock(path, flag: str | None = "--out", *, folder: bool = True):
    """Hold the output ``path`` (a folder, made when missing, or with ``folder=False`` a file) for
    this run: an exclusive, non-blocking ``fcntl.flock`` on ``<folder>/.lnproofs.lock``
    (``<file>.lock``), released and removed at the end, with the folder if the run made it and
    left it empty; while another run holds it, one line (exit status 2).  The system releases a
    lock whose process dies, so a killed run never blocks the next one."""
    try:
        import fcntl
    except ImportError:  # no flock on this system: runs are not kept apart
        yield
        return
    path = Path(path)
    made = folder and not os.path.lexists(path)
    if made:  # a folder this run makes: removed again when the run leaves it empty (refused early, say)
        output_folder(path, flag)
    lock = path / LOCK_NAME if folder else path.with_name(path.name + ".lock")
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(8):  # a lock file removed by the run that held it between our open and flock: again
        try:
            fd = os.open(lock, flags, 0o644)
        except OSError as exc:
            raise OptionError(f"{_name(flag, path)} cannot be locked for this run ({lock}: {exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise OptionError(
                f"{_name(flag, path)} is being written by another lnproofs run"
                + (f" (process {holder})" if holder.isdigit() else "")
                + f"; wait for it to finish, or choose another {flag or 'output'}"
            ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lock, follow_symlinks=False).st_ino
        except OSError:
            same = False
        if same:
            break
        os.close(fd)
    else:
        raise OptionError(f"{_name(flag, path)} cannot be locked for this run ({lock} keeps changing)")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)
        if made:
            with contextlib.suppress(OSError):
                path.rmdir()  # only when empty
