"""Exceptions: one class per GPErrorKind of abi/graphpass.h, all under GraphpassError.

Every failing host call raises the class of the error kind it left in the thread's error slot,
with the host's message (which carries file:line:col for bad text, and names the pass for a
failed pass).  `kind` is the kind's number, `kind_name` its name ("parse", "pass", ...)."""
import re

KINDS = {1: "value", 2: "type", 3: "parse", 4: "not_found", 5: "pass", 6: "version", 7: "io", 8: "verify",
         9: "memory", 10: "internal", 11: "unsupported"}


class GraphpassError(Exception):
    """A failed graphpass call: .kind (int), .kind_name, .message, and for messages that give one,
    .location = (source, line, col)."""
    kind = 10

    def __init__(self, message, kind=None):
        super().__init__(message)
        if kind is not None:
            self.kind = kind
        self.message = message

    @property
    def kind_name(self):
        return KINDS.get(self.kind, "unknown")

    @property
    def location(self):
        m = re.search(r"(\S+?):(\d+):(\d+)", self.message)
        return (m.group(1), int(m.group(2)), int(m.group(3))) if m else None

    def __str__(self):
        return "[%s] %s" % (self.kind_name, self.message)


class GPValueError(GraphpassError, ValueError):
    kind = 1


class GPTypeError(GraphpassError, TypeError):
    kind = 2


class ParseError(GraphpassError):
    kind = 3


class NotFoundError(GraphpassError, LookupError):
    kind = 4


class PassError(GraphpassError):
    kind = 5


class VersionError(GraphpassError):
    kind = 6


class GPIOError(GraphpassError, OSError):
    kind = 7


class VerifyError(GraphpassError):
    kind = 8


class GPMemoryError(GraphpassError, MemoryError):
    kind = 9


class InternalError(GraphpassError):
    kind = 10


class UnsupportedError(GraphpassError, NotImplementedError):
    kind = 11


BY_KIND = {1: GPValueError, 2: GPTypeError, 3: ParseError, 4: NotFoundError, 5: PassError, 6: VersionError,
           7: GPIOError, 8: VerifyError, 9: GPMemoryError, 10: InternalError, 11: UnsupportedError}


def from_kind(kind, message):
    cls = BY_KIND.get(kind, GraphpassError)
    return cls(message, kind if kind in KINDS else 10)
