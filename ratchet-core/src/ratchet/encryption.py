"""Payload encryption: a job's arguments, params and result, and a recurring schedule's
argument template, sealed with AES-256-GCM before the store sees them.

Keys come from ``RATCHET_ENCRYPTION_KEYS`` or ``Ratchet(..., encryption=...)``:
comma-separated ``key_id:key`` entries, each key 32 bytes in standard base64
(:func:`generate_key`, ``ratchet keys generate``). The first entry seals everything
written from now on; every entry opens what was sealed with it, so a rotation puts a new
key first, keeps the old ones until ``ratchet keys rotate`` has re-sealed every stored row,
and only then drops them.

A sealed value keeps its column's JSON shape, so every store keeps it as it keeps any
value (no store knows about encryption)::

    args                       [{"ratchet:encrypted": TOKEN}]
    kwargs, params, result     {"ratchet:encrypted": TOKEN}

``TOKEN`` is ``v1:<algorithm>:<key id>:<base64url(nonce + ciphertext + tag)>``: the id of
the key that sealed it travels with the job. The associated data binds each token to its
row and column (``job/<id>/args``, ``recurring/<id>/kwargs``, ...), so a token copied to
another job or column fails to open rather than run with someone else's data. Names,
targets, keys, tags, times and the (redacted) last error stay in clear text: the store must
be able to index and filter them.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ratchet._limits import echo
from ratchet.errors import ConfigurationError, PayloadDecryptionError

__all__ = [
    "AES_256_GCM",
    "ENVELOPE_KEY",
    "Encryption",
    "EncryptionKey",
    "generate_key",
    "sealed_token",
]

ENVELOPE_KEY = "ratchet:encrypted"
"""The one key of the JSON object that holds a sealed value."""

AES_256_GCM = "A256GCM"
"""The algorithm every key uses today; the token names it, so another can be added."""

TOKEN_VERSION = "v1"
KEY_BYTES = 32
NONCE_BYTES = 12  # GCM's standard nonce: random per value, never reused with a key
_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_ALGORITHMS = (AES_256_GCM,)


def generate_key() -> str:
    """A new random 32-byte key in standard base64, ready for ``key_id:<this>``."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode("ascii")


def sealed_token(value: Any) -> str | None:
    """The token of a sealed value (``{"ratchet:encrypted": TOKEN}``), or ``None`` when
    ``value`` is not one. Sealed positional arguments are a one-element list of it."""
    if isinstance(value, dict) and len(value) == 1:
        token = value.get(ENVELOPE_KEY)
        if isinstance(token, str) and token.startswith(TOKEN_VERSION + ":"):
            return token
    return None


def token_key_id(token: str) -> str:
    """The id of the key that sealed ``token`` (``"?"`` when the token is malformed)."""
    parts = token.split(":")
    return parts[2] if len(parts) == 4 else "?"


@dataclass(frozen=True, slots=True)
class EncryptionKey:
    """One key: its id (stored with every value it seals) and its 32 secret bytes."""

    key_id: str
    secret: bytes = field(repr=False)
    algorithm: str = AES_256_GCM

    def __post_init__(self) -> None:
        if not isinstance(self.key_id, str) or not _KEY_ID.fullmatch(self.key_id):
            raise ConfigurationError(
                f"Encryption key id {echo(self.key_id)} is not usable: use 1 to 64 letters, "
                "digits, '_', '-' or '.' (for example 'k2026')."
            )
        if self.algorithm not in _ALGORITHMS:
            raise ConfigurationError(
                f"Encryption key {self.key_id!r} names algorithm {echo(self.algorithm)}; "
                f"the supported ones are {', '.join(_ALGORITHMS)}."
            )
        if not isinstance(self.secret, bytes) or len(self.secret) != KEY_BYTES:
            # Never the key itself: only its length.
            length = len(self.secret) if isinstance(self.secret, bytes) else "no"
            raise ConfigurationError(
                f"Encryption key {self.key_id!r} has {length} bytes; AES-256 needs exactly "
                f"{KEY_BYTES}. Make one with `ratchet keys generate`."
            )


def _decode_secret(key_id: str, text: str, source: str) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigurationError(
            f"{source}: the key of {key_id!r} is not standard base64 (the value is not shown). "
            "Make one with `ratchet keys generate`."
        ) from None


def parse_keys(text: str, *, source: str = "RATCHET_ENCRYPTION_KEYS") -> tuple[EncryptionKey, ...]:
    """``key_id:base64key,...`` into keys, the writing one first. Errors name the entry
    by its key id and never show a key."""
    keys: list[EncryptionKey] = []
    for number, raw in enumerate(text.split(","), start=1):
        entry = raw.strip()
        if not entry:
            continue
        key_id, colon, secret = entry.partition(":")
        if not colon:
            raise ConfigurationError(
                f"{source}: entry {number} has no ':'; write key_id:base64key "
                "(the value is not shown)."
            )
        key_id = key_id.strip()
        keys.append(EncryptionKey(key_id, _decode_secret(key_id, secret, source)))
    return tuple(keys)


class Encryption:
    """The keys of an application: the first seals, every one opens.

    ``keys`` is the ``RATCHET_ENCRYPTION_KEYS`` text or a sequence of
    :class:`EncryptionKey`; ``encrypt_all`` seals every job (``RATCHET_ENCRYPT_ALL``),
    not only those marked ``@app.job(encrypted=True)`` or ``builder.encrypted()``. No key,
    a malformed one, a repeated key id or a missing ``cryptography`` package raise
    :class:`~ratchet.errors.ConfigurationError` here, at start-up, never later.
    """

    def __init__(
        self,
        keys: str | Sequence[EncryptionKey],
        *,
        encrypt_all: bool = False,
        source: str = "RATCHET_ENCRYPTION_KEYS",
    ) -> None:
        parsed = parse_keys(keys, source=source) if isinstance(keys, str) else tuple(keys)
        if not parsed:
            raise ConfigurationError(
                f"{source} holds no key, so nothing could be sealed. Set it to "
                "key_id:base64key (make a key with `ratchet keys generate`), or switch "
                "encryption off."
            )
        seen: set[str] = set()
        for key in parsed:
            if key.key_id in seen:
                raise ConfigurationError(
                    f"{source} names key id {key.key_id!r} twice; every key needs its own id."
                )
            seen.add(key.key_id)
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError:
            raise ConfigurationError(
                "Payload encryption needs the cryptography package: "
                "pip install 'ratchet-core[encryption]'."
            ) from None
        self.keys: tuple[EncryptionKey, ...] = parsed
        self.encrypt_all = bool(encrypt_all)
        self._ciphers = {key.key_id: AESGCM(key.secret) for key in parsed}

    @property
    def write_key_id(self) -> str:
        """The id of the key that seals new values."""
        return self.keys[0].key_id

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(key.key_id for key in self.keys)

    def seal(self, plaintext: str, *, binding: str) -> str:
        """``plaintext`` sealed with the write key, bound to ``binding`` (its row and
        column): a token for :meth:`open`."""
        key = self.keys[0]
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[key.key_id].encrypt(
            nonce, plaintext.encode("utf-8"), self._associated(key, binding)
        )
        body = base64.urlsafe_b64encode(nonce + sealed).decode("ascii").rstrip("=")
        return f"{TOKEN_VERSION}:{key.algorithm}:{key.key_id}:{body}"

    def open(self, token: str, *, binding: str) -> str:
        """The plaintext of ``token``; :class:`~ratchet.errors.PayloadDecryptionError`
        when its key is unknown here, or it was changed, or sealed for another binding."""
        parts = token.split(":")
        if len(parts) != 4 or parts[0] != TOKEN_VERSION:
            raise PayloadDecryptionError(
                f"The sealed value of {binding} is not a {TOKEN_VERSION} token; it was "
                "written by another version or damaged."
            )
        _, algorithm, key_id, body = parts
        key = next((k for k in self.keys if k.key_id == key_id), None)
        if key is None:
            raise PayloadDecryptionError(
                f"The value of {binding} was sealed with key {key_id!r}, which this process "
                f"does not have (it has {', '.join(map(repr, self.key_ids))}). Add that key "
                "to RATCHET_ENCRYPTION_KEYS (after the write key), then retry the job."
            )
        if algorithm != key.algorithm:
            raise PayloadDecryptionError(
                f"The value of {binding} names algorithm {algorithm!r}, but key {key_id!r} is "
                f"a {key.algorithm} key."
            )
        from cryptography.exceptions import InvalidTag

        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            plain = self._ciphers[key_id].decrypt(
                raw[:NONCE_BYTES], raw[NONCE_BYTES:], self._associated(key, binding)
            )
            return plain.decode("utf-8")
        except (InvalidTag, ValueError, binascii.Error):
            raise PayloadDecryptionError(
                f"The value of {binding} does not open with key {key_id!r}: it was changed "
                "after it was sealed, or sealed for another job or column."
            ) from None

    @staticmethod
    def _associated(key: EncryptionKey, binding: str) -> bytes:
        # The version, algorithm and key id are authenticated with the row and column.
        return f"ratchet/{TOKEN_VERSION}/{key.algorithm}/{key.key_id}/{binding}".encode()

    def __repr__(self) -> str:
        return f"Encryption(keys={list(self.key_ids)!r}, encrypt_all={self.encrypt_all})"


def describe_keys(encryption: Encryption | None) -> str:
    """One line for logs and reports: the key ids, never a key."""
    if encryption is None:
        return "off"
    scope = "every job" if encryption.encrypt_all else "jobs marked encrypted"
    count = len(encryption.keys)
    return f"AES-256-GCM, write key {encryption.write_key_id!r}, {count} key(s), {scope}"
