"""The Django app ``ratchet.contrib.django`` (label ``ratchet``): its migrations create
Ratchet's tables, its admin shows them, its management command is ``./manage.py ratchet``."""

from __future__ import annotations

from django.apps import AppConfig  # type: ignore[import-untyped]

__all__ = ["RatchetConfig"]


class RatchetConfig(AppConfig):  # type: ignore[misc]  # Django ships no type hints
    name = "ratchet.contrib.django"
    label = "ratchet"
    verbose_name = "Ratchet jobs"
    default_auto_field = "django.db.models.AutoField"
