"""Migrations on a server, the PostgreSQL specifics: the kit's upgrade from version 1 with
live rows (``ratchet_tck.store.shared``), on version 1 as this store wrote it.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

from ratchet_store_postgresql.schema import migrations
from ratchet_tck.store.shared.upgrades import *  # noqa: F403 (the kit's tests, on this module's hooks)

pytestmark = pytest.mark.server

# Written as version 1 of the store wrote them: a job claimed (and started) by node
# "old-node", with its open execution record, and a pending job that crashed twice before.
_V1_ROWS = """
INSERT INTO ratchet_job (id, name, target, args_json, kwargs_json, status, priority,
    attempts, max_retries, backoff, backoff_ms, crash_count, claim_seq, owner, claimed_at,
    scheduled_at, created_at, started_at, updated_at)
VALUES ('v1-running', 'j', 'tests:noop', '[]', '{}', 'RUNNING', 2, 0, 3, 'NONE', 0, 1, 2,
        'old-node', now() - interval '1 hour', now() - interval '2 hours',
        now() - interval '2 hours', now() - interval '1 hour', now() - interval '1 hour'),
       ('v1-pending', 'j', 'tests:noop', '[]', '{}', 'PENDING', 2, 0, 3, 'NONE', 0, 2, 2,
        NULL, NULL, now(), now(), NULL, now());
INSERT INTO ratchet_execution (job_id, claim_seq, attempt, node_id, status, started_at)
VALUES ('v1-running', 2, 1, 'old-node', 'RUNNING', now() - interval '1 hour');
"""


def _write_version_1(url: str) -> list[str]:
    """The first migration, its ledger as version 1 of the store kept it, and the rows."""
    [first, *later] = migrations()
    with psycopg.connect(url) as conn:
        conn.execute(first.sql.encode("utf-8"))
        conn.execute(
            "CREATE TABLE ratchet_schema_version (version integer PRIMARY KEY, name text "
            "NOT NULL, applied_at timestamptz NOT NULL DEFAULT statement_timestamp())"
        )
        conn.execute("INSERT INTO ratchet_schema_version VALUES (1, %s)", (first.name,))
        conn.execute(_V1_ROWS.encode("utf-8"))
    return [migration.name for migration in later]


@pytest.fixture
def version_1_database() -> Callable[[str], list[str]]:
    return _write_version_1
