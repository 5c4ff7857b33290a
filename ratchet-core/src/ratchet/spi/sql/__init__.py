"""The shared SQL store layer: what an SQL backend builds on (public SPI).

:class:`SQLJobStore` implements every JobStore method once over a backend's primitives
and tuned paths; :class:`Statements` loads the backend's named statements from its
``.sql`` file; :class:`RowEncoder` turns value types into statement parameters (the twin
of :class:`ratchet.spi.RowDecoder`); :class:`SQLSession` is what a transaction runs
statements on; :func:`sqlalchemy_dbapi_connection` and friends reach the DB-API
connection behind an application's SQLAlchemy objects (transactional enqueue). See
CONTRIBUTING.md ("Adding a store operation") for the order in which a
new operation reaches every store.
"""

from __future__ import annotations

from ratchet.spi._rows import RowDecoder
from ratchet.spi.sql._encoder import RowEncoder, json_list, strict_json
from ratchet.spi.sql._job_query import driving_statement, job_query_fragments
from ratchet.spi.sql._migrations import Migration, load_migrations
from ratchet.spi.sql._queues import due_in_queues, queue_params
from ratchet.spi.sql._session import IN_LIST_CHUNK, Params, Row, SQLSession
from ratchet.spi.sql._sqlalchemy import (
    driver_connection,
    run_with_sync_connection,
    sqlalchemy_dbapi_connection,
)
from ratchet.spi.sql._statements import Statements
from ratchet.spi.sql._store import STATEMENTS, SQLJobStore

__all__ = [
    "IN_LIST_CHUNK",
    "STATEMENTS",
    "Migration",
    "Params",
    "Row",
    "RowDecoder",
    "RowEncoder",
    "SQLJobStore",
    "SQLSession",
    "Statements",
    "driver_connection",
    "driving_statement",
    "due_in_queues",
    "job_query_fragments",
    "json_list",
    "load_migrations",
    "queue_params",
    "run_with_sync_connection",
    "sqlalchemy_dbapi_connection",
    "strict_json",
]
