"""Opening the files lnproofs is given: regular files only, their size known before a byte is read.

Every reader of lnproofs (arrays, token ids, certificates and every JSON file ``lnproofs check``
reads, the arrays of a vocabulary certificate, keys files named by a certificate) opens its input
through :func:`open_input`.  The path is opened without following a symbolic link in its last part
(``O_NOFOLLOW``) and without waiting (``O_NONBLOCK``: a FIFO would otherwise block until someone
writes to it), and the open file must be a regular file (``fstat`` of the open file, so what is
checked is what is read): a link (``keys.npy -> /proc/self/mem``), a FIFO, a socket, a device or
a folder is refused in one line naming what it is.  The size is the open file's own, compared
with the caller's limit before anything is read or hashed (a sparse file of a terabyte is refused
from its size at once), and the file is read only as far as that size: a file whose bytes do not
match it (one that grows, or a pseudo-file that reports 0 bytes) is refused as well.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from pathlib import Path

from ..kernel import FileFormatError, LimitError

__all__ = ["open_input", "read_input", "sha256_input", "input_kind"]

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def input_kind(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file (None for a regular file)."""
    return None if stat.S_ISREG(mode) else next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: Path, what: str, kind: str) -> FileFormatError:
    if kind == "a symbolic link":
        try:
            kind += f" (to {os.readlink(path)[:200]})"
        except OSError:
            pass
    return FileFormatError(f"{what or path} is {kind}; give a regular file (lnproofs reads no links, pipes or devices)")


@contextlib.contextmanager
def open_input(path, what: str = "", max_bytes: int | None = None, limit: str = ""):
    """``(handle, size)`` of the regular file at ``path``, opened for binary reading, or one line:
    missing, not a regular file (a link, a FIFO, a socket, a device, a folder), unreadable, or
    larger than ``max_bytes`` (``limit`` says which limit and how to raise it)."""
    path = Path(path)
    name = what or str(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise FileFormatError(f"{name} does not exist") from None
        if exc.errno in (errno.ELOOP, errno.EMLINK) or path.is_symlink():
            raise _refuse(path, what, "a symbolic link") from None
        try:
            kind = input_kind(os.lstat(path).st_mode)
        except OSError:
            kind = None
        if kind is not None:
            raise _refuse(path, what, kind) from None
        raise FileFormatError(f"{name} could not be read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        kind = input_kind(info.st_mode)
        if kind is not None:
            raise _refuse(path, what, kind)
        if max_bytes is not None and info.st_size > max_bytes:
            raise LimitError(
                f"{name} has {info.st_size} bytes, past the limit of {max_bytes} bytes"
                + (f" ({limit})" if limit else "")
            )
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        try:
            yield handle, info.st_size
        except OSError as exc:  # a read that fails (EIO on a pseudo-file, a file cut short meanwhile)
            raise FileFormatError(f"{name} could not be read ({exc.strerror or exc})") from None


def read_input(path, what: str = "", max_bytes: int | None = None, limit: str = "") -> bytes:
    """The bytes of the regular file at ``path`` (see :func:`open_input`): exactly its size, or one line."""
    with open_input(path, what, max_bytes, limit) as (handle, size):
        data = handle.read(size + 1)
    if len(data) != size:
        raise FileFormatError(f"{what or path} holds {len(data)} bytes where its size says {size}; is it complete?")
    return data


def sha256_input(path, what: str = "", max_bytes: int | None = None, limit: str = "") -> str:
    """The SHA-256 of the regular file at ``path`` (64 lowercase hex digits), its size checked
    against ``max_bytes`` before a byte is hashed; read in 1 MiB blocks, no further than its size."""
    with open_input(path, what, max_bytes, limit) as (handle, size):
        digest, left = hashlib.sha256(), size
        while left > 0:
            block = handle.read(min(left, 1 << 20))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    if left:
        raise FileFormatError(f"{what or path} ended {left} bytes before its size; is it complete?")
    return digest.hexdigest()
