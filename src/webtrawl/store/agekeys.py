"""age keys: the recipients a crawl encrypts its files to (``--encrypt-to``) and the identities that read them back
(``--identity FILE``), through pyrage (the Rust age implementation's binding; files are the standard ``age`` format).

Recipients are X25519 public keys (``age1...``, from ``age-keygen``) or SSH public keys (``ssh-ed25519 ...``,
``ssh-rsa ...``). An identity file is what ``age-keygen`` writes (``AGE-SECRET-KEY-1...`` lines, ``#`` comments)
or an unencrypted OpenSSH private key.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from webtrawl.errors import InputError
from webtrawl.formats.agekey import load_pyrage
from webtrawl.store.recovery import AGE, OPEN_SUFFIX, journal_parts


def read_identities(path: Path) -> list[Any]:
    """The identities in an age identity file (or an OpenSSH private key); one ``trawl: error:`` line if none."""
    pyrage = load_pyrage("--identity")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the identity file {path}: {exc.strerror}") from None
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            return [pyrage.ssh.Identity.from_buffer(data)]
        lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
        found = [pyrage.x25519.Identity.from_str(line) for line in lines if line and not line.startswith("#")]
    except pyrage.IdentityError as exc:
        raise InputError(f"{path}: not an age identity file ({exc})") from None
    if not found:
        raise InputError(f"{path}: no identity (AGE-SECRET-KEY-1...) in it")
    return found


def is_encrypted(path: Path) -> bool:
    """An encrypted output file: sealed (``.age``) or the journal of an open one (``.age.open``)."""
    return path.name.endswith((AGE, AGE + OPEN_SUFFIX))


def output_files(directory: Path, ext: str) -> list[Path]:
    """The files of one output stream in write order: sealed ones (plain, encrypted, recovered parts), then the
    ones still open (plain ``.open``, or the journal of an open encrypted file)."""
    sealed = [*directory.glob(f"*{ext}"), *directory.glob(f"*{ext}{AGE}")]
    still_open = [*directory.glob(f"*{ext}{OPEN_SUFFIX}"), *directory.glob(f"*{ext}{AGE}{OPEN_SUFFIX}")]
    return sorted(sealed) + sorted(still_open)


def open_output(path: Path, identity_file: Path | None) -> BinaryIO:
    """An output file to read: as it is, or (``.age``) decrypted with the identities in ``identity_file``."""
    if not is_encrypted(path):
        return path.open("rb")
    return io.BytesIO(read_output(path, read_identities(identity_file) if identity_file else None))


def read_output(path: Path, identities: Sequence[Any] | None) -> bytes:
    """An output file's bytes, decrypted if it is encrypted (one ``trawl: error:`` line without an identity or with
    the wrong one)."""
    data = path.read_bytes()
    if not is_encrypted(path):
        return data
    if not identities:
        raise InputError(
            f"{path} is encrypted: give --identity FILE (identity= in Python): the key of one of its --encrypt-to "
            "recipients"
        )
    pyrage = load_pyrage("--identity")
    parts = journal_parts(data) if path.name.endswith(OPEN_SUFFIX) else [data]  # an open file: its whole appends
    try:
        plain = b"".join(pyrage.decrypt(part, list(identities)) for part in parts)
    except pyrage.DecryptError as exc:
        raise InputError(f"cannot decrypt {path} with the --identity given: {exc}") from None
    return plain
