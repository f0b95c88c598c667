"""age recipients (``--encrypt-to``): the key format the option table checks and the store encrypts to, here so that
the option table does not import the store. Read through pyrage (the Rust age implementation's binding)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from webtrawl.errors import ConfigError

_NEEDS = "needs pyrage: pip install 'webtrawl[encrypt]'"


def load_pyrage(flag: str) -> Any:
    try:
        import pyrage
    except ModuleNotFoundError:
        raise ConfigError(f"{flag} {_NEEDS}") from None
    return pyrage


def check_recipient(text: str) -> str:
    """One ``--encrypt-to`` value, checked (ValueError with the reason if it is not a public key)."""
    recipient(str(text).strip())
    return str(text).strip()


def recipient(text: str) -> Any:
    pyrage = load_pyrage("--encrypt-to")
    try:
        if text.startswith("ssh-"):
            return pyrage.ssh.Recipient.from_str(text)
        return pyrage.x25519.Recipient.from_str(text)
    except pyrage.RecipientError as exc:
        raise ValueError(f"not an age public key (age1... or ssh-...): {text[:80]!r} ({exc})") from None


def recipients(texts: Sequence[str]) -> list[Any]:
    return [recipient(text) for text in texts]
