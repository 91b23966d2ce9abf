"""Passwords in configuration documents: found (an admin API write refuses them) and hidden (answers show ``***``).

A password hides in three shapes: a key named ``password`` (Road2's database files, pg Pool
options), a URL with credentials (``postgresql://user:secret@host/db``, ``http://user:secret@host``)
and a libpq keyword DSN (``host=db password=secret``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

HIDDEN = "***"

#: ``scheme://user:password@`` (the user part may be empty); group 2 is the password.
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:)([^/@\s]*)(@)")
#: ``password=value`` of a keyword DSN, its value bare or quoted; group 2 is the value.
_KEYWORD_PASSWORD = re.compile(r"""(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&]*)""", re.IGNORECASE)
#: ``"password": "value"`` of a JSON document or a Python dict quoted in a message; group 3 is the value.
_QUOTED_PASSWORD = re.compile(r"""(["'](?:password|passwd|pgpassword)["']\s*:\s*)(["'])((?:[^"'\\]|\\.|(?!\2)["'])*)\2""", re.IGNORECASE)
#: The values of ``password=`` that hold no password.
_EMPTY = ("", "''", '""')
#: Keys whose value is a password (compared in lower case, without ``_`` and ``-``).
_PASSWORD_KEYS = frozenset({"password", "passwd", "pgpassword"})


def _is_password_key(key: str) -> bool:
    return key.lower().replace("_", "").replace("-", "") in _PASSWORD_KEYS


def text_has_password(text: str) -> bool:
    """Whether ``text`` is (or holds) a URL with a password or a keyword DSN with ``password=``."""
    url = _URL_PASSWORD.search(text)
    keyword = _KEYWORD_PASSWORD.search(text)
    return bool((url and url.group(2)) or (keyword and keyword.group(2) not in _EMPTY))


def redact_text(text: str) -> str:
    """``text`` with the passwords of its URLs, DSNs and quoted ``"password": ...`` pairs replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{HIDDEN}{m.group(3)}" if m.group(2) else m.group(0), text)
    text = _KEYWORD_PASSWORD.sub(lambda m: f"{m.group(1)}{HIDDEN}" if m.group(2) not in _EMPTY else m.group(0), text)
    return _QUOTED_PASSWORD.sub(lambda m: f"{m.group(1)}{m.group(2)}{HIDDEN}{m.group(2)}" if m.group(3) else m.group(0), text)


def inline_secrets(data: Any, key: str = "") -> Iterator[str]:
    """The key path of every password held inline in a JSON-like document."""
    if isinstance(data, Mapping):
        for name, value in data.items():
            path = f"{key}.{name}" if key else str(name)
            if _is_password_key(str(name)) and isinstance(value, str) and value:
                yield path
            else:
                yield from inline_secrets(value, path)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from inline_secrets(value, f"{key}[{i}]")
    elif isinstance(data, str) and text_has_password(data):
        yield key or "(top level)"


def redact(data: Any) -> Any:
    """A copy of a JSON-like answer with every password replaced by ``***`` (keys named so, URLs, DSNs)."""
    if isinstance(data, Mapping):
        return {
            name: HIDDEN if _is_password_key(str(name)) and isinstance(value, str) and value else redact(value)
            for name, value in data.items()
        }
    if isinstance(data, list):
        return [redact(value) for value in data]
    if isinstance(data, str):
        return redact_text(data)
    return data
