"""Transactional enqueue from asyncio: ``await app.enqueue_in_async(...)`` and
``enqueue_many_in_async`` on an SQLAlchemy ``AsyncSession`` or ``AsyncConnection`` of a
``mysql+aiomysql://`` async engine.

Commit, rollback, conflicts, autocommit connections (atomic in aiomysql's ``begin()``) and
the refusal of async objects by the sync methods are the kit's tests
(``ratchet_tck.store.shared.async_transactions``), run here on aiomysql in utf8mb4. MySQL's
own: a connection without utf8mb4 is refused.
"""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from ratchet import Ratchet
from ratchet.errors import RatchetError
from ratchet_store_mysql import MySQLJobStore
from ratchet_tck.store.shared.async_transactions import *  # noqa: F403 (the kit's tests, on this module's hooks)
from ratchet_tck.store.shared.async_transactions import claimable, engine_on, run

pytestmark = pytest.mark.server


def aiomysql_url(mysql_url: str, charset: str) -> str:
    """The test database as an SQLAlchemy URL for create_async_engine, through aiomysql,
    with the connection character set ``charset``."""
    parsed = make_url(mysql_url).set(drivername="mysql+aiomysql")
    return parsed.update_query_dict({"charset": charset}).render_as_string(False)


@pytest.fixture
def async_url(mysql_url: str) -> str:
    return aiomysql_url(mysql_url, "utf8mb4")


@pytest.fixture
def async_batch_size() -> int:
    return 20


def test_a_connection_without_utf8mb4_is_refused(
    app: Ratchet, store: MySQLJobStore, mysql_url: str
) -> None:
    async def scenario() -> None:
        latin1 = aiomysql_url(mysql_url, "latin1")
        async with engine_on(latin1) as engine, AsyncSession(engine) as session:
            with pytest.raises(RatchetError, match="utf8mb4"):
                await app.enqueue_in_async(session, "shop.ship", 1)
            await session.commit()

    run(scenario)
    assert claimable(store) == []
