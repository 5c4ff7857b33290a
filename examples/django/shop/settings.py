"""Settings of the example shop: one app (``orders``) whose tasks run on Ratchet.

The jobs live in the project's own database (``default``), so enqueueing inside
``transaction.atomic()`` is part of the transaction. That database is SQLite by default
(``SHOP_DATABASE`` moves the file; the tests use a temporary one), or PostgreSQL when
``SHOP_DATABASE_URL`` is set, e.g. ``postgresql://user:password@localhost:5432/shop``
(Django's ``postgresql`` backend, on psycopg 3).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = "example-only-not-secret"
DEBUG = True
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]
USE_TZ = True

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "ratchet.contrib.django",  # migrations (Ratchet's tables), admin pages, ./manage.py ratchet
    "orders",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "shop.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]


def postgresql_database(url: str) -> dict[str, Any]:
    """Django's settings for the database at ``url`` (``postgresql://`` only)."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres") or not parts.path.strip("/"):
        raise ValueError(
            f"SHOP_DATABASE_URL (scheme {parts.scheme!r}; the rest, which may hold a "
            "password, is not shown) is not a PostgreSQL URL with a database name; "
            "use postgresql://user:password@host:5432/dbname, or unset it for SQLite."
        )
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.strip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }


_database_url = os.environ.get("SHOP_DATABASE_URL")
DATABASES = {
    "default": postgresql_database(_database_url)
    if _database_url
    else {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOP_DATABASE", str(BASE_DIR / "db.sqlite3")),
    }
}

# Every @task runs as a Ratchet job, stored in DATABASES["default"].
TASKS = {"default": {"BACKEND": "ratchet.contrib.django.RatchetBackend"}}

# Ratchet options (any RatchetOptions field) and the integration's own keys.
RATCHET = {
    "MAX_RETRIES": 2,
    "COORDINATOR": "none",  # one process: workers poll
}
