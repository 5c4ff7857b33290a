"""Django integration (extra ``ratchet-core[django]``): a ``django.tasks`` backend that
runs ``@task`` functions as Ratchet jobs, enqueue that joins Django's transaction, the
``./manage.py ratchet`` command, the schema as Django migrations and read-only admin pages.

    INSTALLED_APPS = [..., "ratchet.contrib.django"]
    TASKS = {"default": {"BACKEND": "ratchet.contrib.django.RatchetBackend"}}
    RATCHET = {"ALLOWED_MODULES": []}        # optional; see ratchet.contrib.django.config

Then ``./manage.py migrate`` creates the tables in the ``default`` database and
``./manage.py ratchet worker`` runs the tasks (``--burst``: what is due, then exit).

Works with ``django.tasks`` on Django 6 and with the ``django-tasks`` backport on Django
4.2-5.2 (:mod:`ratchet.contrib.django.compat` picks whichever is installed). Importing
this package reads no settings: :class:`RatchetBackend` is loaded when first named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ratchet.contrib.django.backend import RatchetBackend

__all__ = ["RatchetBackend"]


def __getattr__(name: str) -> Any:
    # Django imports this package while it loads INSTALLED_APPS, before the app registry
    # is ready; the backend (and django.tasks) are imported only when TASKS names it.
    if name == "RatchetBackend":
        from ratchet.contrib.django.backend import RatchetBackend

        return RatchetBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
