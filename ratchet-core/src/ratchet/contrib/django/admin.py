"""Read-only admin pages for Ratchet's jobs, dead letters and recurring schedules.

Nothing can be added, changed or deleted here: the store owns these rows, and a write
that bypassed it would break its invariants (claims, fencing, keys). Retry and cancel
with ``./manage.py ratchet jobs retry ID`` / ``jobs cancel ID`` / ``dlq retry --all``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin  # type: ignore[import-untyped]

from ratchet.contrib.django.models import DeadLetter, Job, RecurringSchedule

__all__ = ["DeadLetterAdmin", "JobAdmin", "ReadOnlyAdmin", "RecurringScheduleAdmin"]


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[misc]  # Django ships no type hints
    """View permission only: no add, change or delete, no bulk actions."""

    actions = None

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display: ClassVar[list[str]] = [
        "id",
        "name",
        "status",
        "priority",
        "attempts",
        "created_at",
        "finished_at",
    ]
    list_filter: ClassVar[list[str]] = ["status", "priority"]
    search_fields: ClassVar[list[str]] = ["id", "name", "business_key"]


@admin.register(DeadLetter)
class DeadLetterAdmin(ReadOnlyAdmin):
    list_display: ClassVar[list[str]] = ["id", "name", "attempts", "finished_at", "last_error"]
    search_fields: ClassVar[list[str]] = ["id", "name"]


@admin.register(RecurringSchedule)
class RecurringScheduleAdmin(ReadOnlyAdmin):
    list_display: ClassVar[list[str]] = ["id", "name", "cron", "zone", "source", "updated_at"]
    search_fields: ClassVar[list[str]] = ["id", "name"]
