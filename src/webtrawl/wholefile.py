"""A small file replaced whole: a reader meanwhile (another run, another process) sees the old file or the new one,
never one half written, and a full disk leaves the old one as it was."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def replace_whole(path: Path, data: bytes, mode: int = 0o644) -> None:
    """``path`` replaced by ``data`` (created with ``mode``, less the umask: 0o600 for a file its owner's alone); the
    temporary file beside it has a name of its own, so two processes writing at once do not take each other's."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with open(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
