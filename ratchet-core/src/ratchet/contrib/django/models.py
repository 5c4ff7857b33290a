"""Unmanaged models over Ratchet's tables, for the read-only admin pages: the jobs, the
dead letters (FAILED jobs) and the recurring schedules.

Only columns every SQL store shares are mapped (tags and params are stored differently
per backend). The tables belong to the store: Django never creates, alters or writes
them (``managed = False``; the admin allows no add, change or delete).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

from django.db import models  # type: ignore[import-untyped]
from django.utils.dateparse import parse_datetime  # type: ignore[import-untyped]

__all__ = ["DeadLetter", "Job", "RatchetTimeField", "RecurringSchedule"]


class RatchetTimeField(models.Field):  # type: ignore[misc]  # Django ships no type hints
    """A moment as the store keeps it: epoch seconds (SQLite) or a timestamp (PostgreSQL,
    MySQL, in UTC), read as an aware datetime."""

    def get_internal_type(self) -> str:
        # Not DateTimeField: SQLite's converter for that expects text, the store writes
        # REAL seconds. No backend converts floats, so from_db_value sees the raw value.
        return "FloatField"

    def from_db_value(self, value: Any, _expression: Any, _connection: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        if isinstance(value, int | float | Decimal):
            return datetime.fromtimestamp(float(value), UTC)
        parsed: datetime | None = parse_datetime(str(value))
        if parsed is not None and parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed


class Job(models.Model):  # type: ignore[misc]
    """A row of ``ratchet_job`` (read-only)."""

    id = models.TextField(primary_key=True)
    name = models.TextField()
    target = models.TextField()
    status = models.TextField()
    priority = models.IntegerField()
    attempts = models.IntegerField()
    max_retries = models.IntegerField()
    owner = models.TextField(null=True)
    business_key = models.TextField(null=True)
    args_json = models.TextField()
    kwargs_json = models.TextField()
    result_json = models.TextField(null=True)
    last_error = models.TextField(null=True)
    scheduled_at = RatchetTimeField(null=True)
    created_at = RatchetTimeField(null=True)
    started_at = RatchetTimeField(null=True)
    finished_at = RatchetTimeField(null=True)

    class Meta:
        managed = False
        db_table = "ratchet_job"
        ordering: ClassVar[list[str]] = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.status}) {self.id}"


class _DeadLetters(models.Manager):  # type: ignore[misc]
    def get_queryset(self) -> Any:
        return super().get_queryset().filter(status="FAILED")


class DeadLetter(Job):
    """A FAILED job: the dead-letter queue (``ratchet dlq list``)."""

    objects = _DeadLetters()

    class Meta:
        proxy = True
        verbose_name = "dead letter"


class RecurringSchedule(models.Model):  # type: ignore[misc]
    """A row of ``ratchet_recurring`` (read-only): one saved schedule."""

    id = models.TextField(primary_key=True)
    cron = models.TextField()
    zone = models.TextField()
    misfire = models.TextField()
    name = models.TextField()
    target = models.TextField()
    priority = models.IntegerField()
    source = models.TextField()
    created_at = RatchetTimeField(null=True)
    updated_at = RatchetTimeField(null=True)

    class Meta:
        managed = False
        db_table = "ratchet_recurring"
        ordering: ClassVar[list[str]] = ["id"]

    def __str__(self) -> str:
        return f"{self.id} ({self.cron})"
