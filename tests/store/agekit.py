"""An age key pair made by Debian's ``age-keygen``, and files decrypted by Debian's ``age``: the standard tools a
user reads an encrypted crawl with."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class AgeKey:
    identity: Path  # the file age-keygen wrote (secret key)
    recipient: str  # its public key, age1...

    def decrypt(self, path: Path) -> bytes:
        """``age -d -i KEY FILE``: the file's plaintext (fails the test if age refuses it)."""
        done = subprocess.run(["age", "-d", "-i", str(self.identity), str(path)], capture_output=True, timeout=60)
        assert done.returncode == 0, (path, done.stderr)
        return done.stdout


def age_key(directory: Path) -> AgeKey:
    if shutil.which("age-keygen") is None or shutil.which("age") is None:
        pytest.skip("Debian's age package is not installed")
    directory.mkdir(parents=True, exist_ok=True)
    identity = directory / "key.txt"
    subprocess.run(["age-keygen", "-o", str(identity)], check=True, capture_output=True, timeout=30)
    public = next(line for line in identity.read_text().splitlines() if line.startswith("# public key: "))
    return AgeKey(identity, public.removeprefix("# public key: ").strip())
