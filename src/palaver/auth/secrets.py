"""Secret material: tokens are random, stored only as hashes, and compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets

SESSION_TOKEN_BYTES = 32
GUEST_KEY_PREFIX = "pvg_"


def new_session_token() -> str:
    return secrets.token_urlsafe(SESSION_TOKEN_BYTES)


def new_guest_key() -> str:
    return GUEST_KEY_PREFIX + secrets.token_urlsafe(SESSION_TOKEN_BYTES)


def hash_token(token: str) -> str:
    """Tokens carry 256 random bits, so one SHA-256 is enough; no slow hash is needed."""
    return hashlib.sha256(token.encode()).hexdigest()


def same_secret(given: str, expected: str) -> bool:
    """Compare digests rather than the strings so that not even the length leaks."""
    return hmac.compare_digest(
        hashlib.sha256(given.encode()).digest(), hashlib.sha256(expected.encode()).digest()
    )


def owner_key_tag(owner_key: str, salt: bytes) -> str:
    """A slow, salted fingerprint of the owner key: tells owner sessions made under an old key
    apart from current ones without storing anything from which the key is cheap to guess."""
    return hashlib.scrypt(owner_key.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32).hex()
