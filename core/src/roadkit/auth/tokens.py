"""Static tokens (admin tokens, API keys): a file that stores only a salted hash of each token, never the token.

One line per token: ``NAME sha256$SALT$DIGEST`` where DIGEST is ``sha256(SALT + token)`` in hex;
``#`` starts a comment. Tokens are 256 random bits, so a salted SHA-256 is enough: no one can
guess a token from its hash, and checking one costs microseconds on every request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from pathlib import Path

import attrs

from roadkit.config.writer import atomic_write
from roadkit.errors import ConfigurationError

#: What a generated token starts with, so that logs and scanners can recognize one.
PREFIX = "rkadm_"
#: What a generated API key of the routing APIs starts with.
API_KEY_PREFIX = "rkkey_"
_NAME = re.compile(r"[A-Za-z0-9_.@-]+")
_LINE = re.compile(r"^(?P<name>[A-Za-z0-9_.@-]+)\s+sha256\$(?P<salt>[0-9a-f]{32})\$(?P<digest>[0-9a-f]{64})$")


def _digest(salt: str, token: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + token.encode("utf-8")).hexdigest()


def hash_token(token: str) -> str:
    """The stored form of ``token``: ``sha256$SALT$DIGEST``."""
    salt = secrets.token_hex(16)
    return f"sha256${salt}${_digest(salt, token)}"


@attrs.frozen
class StoredToken:
    """One line of the tokens file."""

    name: str
    salt: str
    digest: str

    def matches(self, token: str) -> bool:
        return hmac.compare_digest(_digest(self.salt, token), self.digest)


def read_tokens(path: Path) -> list[StoredToken]:
    """Every token hash of the file; a malformed line is a ConfigurationError naming it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError([f"{path}: can't read the tokens file ({exc})"]) from None
    tokens: list[StoredToken] = []
    problems: list[str] = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            problems.append(
                f"{path}: line {number}: expected 'NAME sha256$SALT$DIGEST' (made by 'roadkit admin-token' or 'roadkit api-key'),"
                " got something else"
            )
            continue
        tokens.append(StoredToken(match["name"], match["salt"], match["digest"]))
    if problems:
        raise ConfigurationError(problems)
    return tokens


def add_token(path: Path, name: str, *, prefix: str = PREFIX, what: str = "admin tokens") -> str:
    """A new token named ``name``: its hash is appended to ``path`` (created 0600); the token is returned once."""
    if not _NAME.fullmatch(name):
        raise ConfigurationError([f"token name: expected letters, digits, '_', '.', '@' or '-', got {name!r}"])
    existing = path.read_text(encoding="utf-8") if path.exists() else f"# roadkit {what}: only salted hashes are stored here.\n"
    if path.exists():
        if any(t.name == name for t in read_tokens(path)):
            raise ConfigurationError([f"{path}: a token named {name!r} exists already (remove its line to replace it)"])
        if existing and not existing.endswith("\n"):
            existing += "\n"
    token = prefix + secrets.token_urlsafe(32)
    atomic_write(path, existing + f"{name} {hash_token(token)}\n", mode=0o600)  # never readable by others, not even for a moment
    return token


def remove_token(path: Path, name: str) -> bool:
    """Remove the token named ``name`` from ``path`` (its other lines kept as they are); False when there is none."""
    read_tokens(path)  # a malformed file is reported, not rewritten
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if line.split(maxsplit=1)[:1] != [name] or line.lstrip().startswith("#")]
    if len(kept) == len(lines):
        return False
    atomic_write(path, "".join(kept), mode=0o600)
    return True
