"""Store schema version 13 (``0013_permit_slots.sql``: a resource's permits as numbered
slots, the held permits carried over), applied by the store's own migrator like 0001 and
0006, so ``migrate`` brings an install that Django migrated before to the schema this
release's workers expect."""

from __future__ import annotations

from typing import ClassVar

from django.db import migrations  # type: ignore[import-untyped]

from ratchet.contrib.django.schema import apply_store_schema


class Migration(migrations.Migration):  # type: ignore[misc]  # Django ships no type hints
    # Not atomic, as 0001: the store's migrator runs on its own connection and transaction.
    atomic = False
    dependencies: ClassVar[list[tuple[str, str]]] = [("ratchet", "0010_batches")]

    operations: ClassVar[list[object]] = [
        migrations.RunPython(apply_store_schema, migrations.RunPython.noop, elidable=False),
    ]
