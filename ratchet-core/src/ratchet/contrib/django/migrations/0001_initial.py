"""Ratchet's tables: the store's shipped SQL (see :mod:`ratchet.contrib.django.schema`),
and the unmanaged models the admin reads them through."""

from __future__ import annotations

from typing import ClassVar

from django.db import migrations, models  # type: ignore[import-untyped]

import ratchet.contrib.django.models
from ratchet.contrib.django.schema import apply_store_schema


def _time() -> ratchet.contrib.django.models.RatchetTimeField:
    return ratchet.contrib.django.models.RatchetTimeField(null=True)


class Migration(migrations.Migration):  # type: ignore[misc]  # Django ships no type hints
    # Not atomic: the store's migrator runs on its own connection and transaction (on
    # SQLite a second writer would wait for Django's open transaction).
    atomic = False
    initial = True
    dependencies: ClassVar[list[tuple[str, str]]] = []

    operations: ClassVar[list[object]] = [
        migrations.RunPython(apply_store_schema, migrations.RunPython.noop, elidable=False),
        migrations.CreateModel(
            name="Job",
            fields=[
                ("id", models.TextField(primary_key=True, serialize=False)),
                ("name", models.TextField()),
                ("target", models.TextField()),
                ("status", models.TextField()),
                ("priority", models.IntegerField()),
                ("attempts", models.IntegerField()),
                ("max_retries", models.IntegerField()),
                ("owner", models.TextField(null=True)),
                ("business_key", models.TextField(null=True)),
                ("args_json", models.TextField()),
                ("kwargs_json", models.TextField()),
                ("result_json", models.TextField(null=True)),
                ("last_error", models.TextField(null=True)),
                ("scheduled_at", _time()),
                ("created_at", _time()),
                ("started_at", _time()),
                ("finished_at", _time()),
            ],
            options={"db_table": "ratchet_job", "managed": False, "ordering": ["-created_at"]},
        ),
        migrations.CreateModel(
            name="RecurringSchedule",
            fields=[
                ("id", models.TextField(primary_key=True, serialize=False)),
                ("cron", models.TextField()),
                ("zone", models.TextField()),
                ("misfire", models.TextField()),
                ("name", models.TextField()),
                ("target", models.TextField()),
                ("priority", models.IntegerField()),
                ("source", models.TextField()),
                ("created_at", _time()),
                ("updated_at", _time()),
            ],
            options={"db_table": "ratchet_recurring", "managed": False, "ordering": ["id"]},
        ),
        migrations.CreateModel(
            name="DeadLetter",
            fields=[],
            options={
                "proxy": True,
                "verbose_name": "dead letter",
                "indexes": [],
                "constraints": [],
            },
            bases=("ratchet.job",),
        ),
    ]
