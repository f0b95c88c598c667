"""Secrets never reach a log line or a record's ``error_detail``: the userinfo of any URL in a text is masked.

A crawler reads links written by strangers (``http://user:password@host/``) and is given Redis URLs with
passwords; both end up in exception messages. Masking the whole userinfo (not only the password) also covers
tokens used as a user name (``https://TOKEN@host/``).
"""

from __future__ import annotations

import re

# to the authority's last "@", as URL parsers read it ("http://u:p@ss@host/" is the password "p@ss")
_USERINFO_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s?#\[\]]*@")
# A URL we were given (Redis, a sink, a proxy): its password runs to the LAST "@" of the authority, as urllib and
# redis-py read it ("redis://:p@ss@host" is the password "p@ss"); the user name stays (it says which login).
_PASSWORD_RE = re.compile(r"^([a-z][a-z0-9+.-]*://)([^:@/?#]*):[^/?#]*@", re.IGNORECASE)
_QUERY_SECRET_RE = re.compile(r"([?&](?:password|passwd|pass|secret|token)=)[^&#]*", re.IGNORECASE)
# schemes whose user name alone is a secret: nats://TOKEN@host is NATS token auth
_TOKEN_USER_RE = re.compile(r"^(nats)://[^:/?#]*@", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with ``scheme://userinfo@`` of every URL in it replaced by ``scheme://***@``."""
    if "@" not in text:
        return text
    return _USERINFO_RE.sub(r"\1***@", text)


def mask_password(url: str) -> str:
    """A URL the crawl was given (``--redis``, a sink, ``--proxy``) with its password (``user:PASSWORD@``,
    ``?password=``, a NATS token as the user name) replaced by ``***``; the user name stays."""
    url = _TOKEN_USER_RE.sub(r"\1://***@", url, count=1)
    url = _PASSWORD_RE.sub(r"\1\2:***@", url, count=1)
    return _QUERY_SECRET_RE.sub(r"\1***", url)
