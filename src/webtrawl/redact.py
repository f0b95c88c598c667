"""Secrets never reach a log line or a record's ``error_detail``: the userinfo of any URL in a text is masked.

A crawler reads links written by strangers (``http://user:password@host/``) and is given Redis URLs with
passwords; both end up in exception messages. Masking the whole userinfo (not only the password) also covers
tokens used as a user name (``https://TOKEN@host/``).
"""

from __future__ import annotations

import re

_USERINFO_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@?#\[\]]*@")


def redact(text: str) -> str:
    """``text`` with ``scheme://userinfo@`` of every URL in it replaced by ``scheme://***@``."""
    if "@" not in text:
        return text
    return _USERINFO_RE.sub(r"\1***@", text)
