"""``ratchet keys generate|rotate``."""

from __future__ import annotations

import argparse

from ratchet._rotation import KeyRotation, rotate_keys
from ratchet.cli import _output
from ratchet.cli._commands import open_store, payloads_of
from ratchet.encryption import EncryptionKey, generate_key
from ratchet.errors import ConfigurationError

__all__ = ["cmd_keys_generate", "cmd_keys_rotate"]


def cmd_keys_generate(args: argparse.Namespace) -> int:
    key_id = args.id
    EncryptionKey(key_id, b"\0" * 32)  # checks the id only: ConfigurationError names it
    _output.echo(f"{key_id}:{generate_key()}")
    return 0


def cmd_keys_rotate(args: argparse.Namespace) -> int:
    encryption = payloads_of(args).encryption
    if encryption is None:
        raise ConfigurationError(
            "ratchet keys rotate needs the keys: set RATCHET_ENCRYPTION_KEYS with the new "
            "write key first and the old keys after it (or give --app)."
        )
    store = open_store(args, writes=True)

    def progress(report: KeyRotation) -> None:
        _output.echo(
            f"... {report.resealed} re-sealed, {report.current} already current, up to id "
            f"{report.last_id}",
            err=True,
        )

    report = rotate_keys(
        store, encryption, batch_size=args.batch_size, after_id=args.after, on_batch=progress
    )
    _output.echo(
        f"Re-sealed {report.resealed} job(s) and {report.schedules_resealed} recurring "
        f"schedule(s) with key {report.write_key_id!r}; {report.current} were already current."
    )
    if report.moved_on:
        _output.echo(
            f"{report.moved_on} job(s) changed while being re-sealed: run 'ratchet keys rotate' "
            "again to take them.",
            err=True,
        )
    if report.unreadable:
        shown = ", ".join(report.unreadable_ids[:10])
        _output.echo(
            f"{report.unreadable} job(s) could not be opened with any configured key and keep "
            f"their old seal (for example {shown}); keep their key, or purge them.",
            err=True,
        )
    if report.finished:
        _output.echo("Nothing is left under an old key: the old keys may now be removed.")
        return 0
    return 1
