"""Settings of the example shop: one app (``orders``) whose tasks run on Ratchet.

The jobs live in the project's own database (``default``, SQLite here), so enqueueing
inside ``transaction.atomic()`` is part of the transaction. ``SHOP_DATABASE`` moves the
SQLite file (the tests use a temporary one).
"""

from __future__ import annotations

import os
from pathlib import Path

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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOP_DATABASE", str(BASE_DIR / "db.sqlite3")),
    }
}

# Every @task runs as a Ratchet job, stored in DATABASES["default"].
TASKS = {"default": {"BACKEND": "ratchet.contrib.django.RatchetBackend"}}

# Ratchet options (any RatchetOptions field) and the integration's own keys.
RATCHET = {
    "MAX_RETRIES": 2,
    "COORDINATOR": "none",  # one process, SQLite: workers poll
}
