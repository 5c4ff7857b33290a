"""Transactional enqueue from asyncio: ``await app.enqueue_in_async(...)`` and
``enqueue_many_in_async`` on an SQLAlchemy ``AsyncSession`` or ``AsyncConnection`` of a
``postgresql+psycopg://`` async engine.

Commit, rollback, conflicts, autocommit connections and the refusal of async objects by
the sync methods are the kit's tests (``ratchet_tck.store.shared.async_transactions``),
run here on batches of 100 plain jobs, which take the COPY path (``COPY_THRESHOLD``) the
async path drives through psycopg's ``AsyncCopy``. PostgreSQL's own: the LISTEN/NOTIFY hint
arrives at the commit, in commit order, and never for a rollback; a transaction that
already failed is refused.
"""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from ratchet import JobPriority, Ratchet
from ratchet.errors import RatchetError
from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._enqueue import COPY_THRESHOLD
from ratchet_tck.store.shared.async_transactions import *  # noqa: F403 (the kit's tests, on this module's hooks)
from ratchet_tck.store.shared.async_transactions import engine_on, run

pytestmark = pytest.mark.server

BATCH = 100
HINT_CHANNEL = "ratchet_test_async_hint"


@pytest.fixture
def async_url(postgresql_url: str) -> str:
    """The test database as an SQLAlchemy URL for create_async_engine."""
    return make_url(postgresql_url).set(drivername="postgresql+psycopg").render_as_string(False)


@pytest.fixture
def async_batch_size() -> int:
    """Batches the store writes by COPY (``AsyncCopy`` on the async path)."""
    assert BATCH >= COPY_THRESHOLD
    return BATCH


def test_the_hint_is_delivered_at_the_commit_only(
    app: Ratchet, store: PostgreSQLJobStore, postgresql_url: str, async_url: str
) -> None:
    """With the coordinator's hints on, a rolled-back enqueue sends nothing and a committed
    one's NOTIFY arrives after a NOTIFY sent while its transaction was still open: had the
    hint gone out at the insert (or on another connection), it would arrive first; had the
    rolled-back one been sent, its HIGH-priority payload would lead."""

    @app.job(name="shop.alert", priority=JobPriority.HIGH)
    def alert(order: int) -> None: ...

    store.send_hints_with_enqueue(HINT_CHANNEL, lambda priority: f"jobs at {priority}")
    with psycopg.connect(postgresql_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {HINT_CHANNEL}")

        async def scenario() -> None:
            async with engine_on(async_url) as engine:
                async with AsyncSession(engine) as session:
                    await app.enqueue_in_async(session, "shop.alert", 1)
                    await session.rollback()
                async with AsyncSession(engine) as session:
                    await app.enqueue_in_async(session, "shop.ship", 2)
                    listener.execute(f"NOTIFY {HINT_CHANNEL}, 'marker'")
                    await session.commit()

        run(scenario)
        payloads = [n.payload for n in listener.notifies(timeout=10, stop_after=2)]
    assert payloads == ["marker", f"jobs at {int(JobPriority.NORMAL)}"]


def test_a_failed_transaction_is_refused(app: Ratchet, async_url: str) -> None:
    """The caller's transaction already failed: say so instead of a driver error."""

    async def scenario() -> None:
        async with engine_on(async_url) as engine, engine.connect() as conn:
            with pytest.raises(Exception, match="division by zero"):
                await conn.execute(text("SELECT 1 / 0"))
            with pytest.raises(RatchetError, match="roll it back first"):
                await app.enqueue_in_async(conn, "shop.ship", 1)

    run(scenario)
