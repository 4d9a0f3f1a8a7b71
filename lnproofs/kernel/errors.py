"""Every error that ``lnproofs`` raises on purpose.

Each error carries one line meant for a person: it names the offending value and
says what is accepted.  The command line prints that line and exits with status 2;
it never shows a traceback for these errors.

This is the one place where errors for people are defined.  The kernel raises most of them;
``ModelError`` and ``LimitError`` are raised only by the layers above it, and stay here all the
same: one module of errors that every layer, ``torch_backend`` included, can import, rather than
a second place (and a layer between the kernel and the rest) for two classes of one line each.
"""

from __future__ import annotations


class LnproofsError(Exception):
    """Base class: ``str(err)`` is a complete one-line message for a person."""

    exit_status = 2

    def __init__(self, message: str):
        text = " ".join(str(message).split())  # one line, and a readable one: long values cut
        super().__init__(text if len(text) <= 600 else f"{text[:400]} ... {text[-150:]}")


class InputError(LnproofsError, ValueError):
    """A value given by the user is not acceptable."""


class FileFormatError(InputError):
    """A file is missing, unreadable, or not in an accepted format."""


class ShapeError(InputError):
    """An array has the wrong number of dimensions or the wrong size."""


class NonFiniteError(InputError):
    """An array holds NaN or infinite values."""


class OptionError(InputError):
    """A command-line option or keyword argument has an unacceptable value."""


class CertificateFormatError(InputError):
    """A certificate file does not follow the documented schema."""


class ModelError(InputError):
    """A model folder or file cannot be used (missing, unsupported family, bad dtype)."""


class LimitError(InputError):
    """A file is past a documented limit on the work it may cause (the message names the limit and its flag)."""


def require(condition: bool, error: type[LnproofsError], message: str) -> None:
    """Raise ``error(message)`` unless ``condition`` holds."""
    if not condition:
        raise error(message)
