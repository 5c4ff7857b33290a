"""The MongoDB job store, composed from one module per part of the SPI.

Every document several nodes may change is written through a transition token (a unique
insert) that fences its version; :mod:`ratchet_store_mongodb._fencing` explains why
(FerretDB 1.24 does not apply filtered updates atomically) and supplies that protocol and
the database clock to the parts:

* ``_keys``: idempotency keys and business-key reservations;
* ``_enqueue``: ``enqueue``, ``enqueue_many`` and their undo;
* ``_claim``: ``claim_due_jobs`` and ``claim_queue_jobs`` (``SupportsQueues``), never
  from a paused queue;
* ``_outcomes``: complete, fail, retry, release, mark started, cancel (of a running claim
  too: ``SupportsRunningCancel``), late outcome;
* ``_reads``: jobs, counts, queue ages (``SupportsPendingAges``), the activity probe
  (``SupportsActivityProbe``), key look-ups, execution records, the canceled among a
  node's running jobs (``SupportsRunningCancel``);
* ``_cluster``: nodes, locks, orphan recovery, stale execution records;
* ``_recurring``: recurring definitions and fires, cancel by business key or tag;
* ``_archive``: archive and purges;
* ``_job_logs``: job log lines and progress (``SupportsJobLogs``);
* ``_payloads``: raw payload scans and fenced rewrites (``SupportsPayloadRewrite``);
* ``_queries``: filtered listings, dead-letter groups, execution counts (``SupportsJobQuery``);
* ``_permits``: cluster-wide resource permits (``SupportsResourcePermits``);
* ``_queues``: paused queues and per-queue counts (``SupportsQueues``; every job document
  keeps its ``queue``, and one written before queues existed reads as ``"default"``);
* ``_chains``: the release after a success, the cancel of a failed step's dependents, the
  settling scan and the dependents (``SupportsChains``).

``_recurring`` also pauses schedules (``SupportsRecurringPause``).

This module keeps the lifecycle: connecting (and creating the indexes), ``from_url``,
``describe``, ``close`` and ``reset_for_tests`` (which empties every collection of
``_schema``, the paused queues included).
"""

from __future__ import annotations

import threading
from datetime import UTC
from typing import Any

from bson.codec_options import CodecOptions
from pymongo import MongoClient
from pymongo.collection import Collection
from pymongo.errors import ConnectionFailure

from ratchet.errors import StoreUnavailableError
from ratchet.spi import JobStore
from ratchet_store_mongodb import _schema as s
from ratchet_store_mongodb._archive import ArchiveOperations
from ratchet_store_mongodb._batches import BatchOperations
from ratchet_store_mongodb._chains import ChainOperations
from ratchet_store_mongodb._claim import ClaimOperations
from ratchet_store_mongodb._cluster import ClusterOperations
from ratchet_store_mongodb._enqueue import EnqueueOperations
from ratchet_store_mongodb._fencing import STALL_SECONDS, Doc, unavailable
from ratchet_store_mongodb._job_logs import JobLogOperations
from ratchet_store_mongodb._outcomes import OutcomeOperations
from ratchet_store_mongodb._payloads import PayloadOperations
from ratchet_store_mongodb._permits import PermitOperations
from ratchet_store_mongodb._queries import QueryOperations
from ratchet_store_mongodb._queues import QueueOperations
from ratchet_store_mongodb._reads import ReadOperations
from ratchet_store_mongodb._recurring import RecurringOperations
from ratchet_store_mongodb._signals import SignalOperations
from ratchet_store_mongodb._url import parse_store_url
from ratchet_store_mongodb._workflows import WorkflowOperations

__all__ = ["STALL_SECONDS", "MongoDBJobStore"]


class MongoDBJobStore(
    EnqueueOperations,
    ClaimOperations,
    ReadOperations,
    # Before OutcomeOperations: it builds on it (the method order Python requires).
    ClusterOperations,
    OutcomeOperations,
    RecurringOperations,
    ArchiveOperations,
    JobLogOperations,
    PayloadOperations,
    QueryOperations,
    PermitOperations,
    QueueOperations,
    ChainOperations,
    SignalOperations,
    WorkflowOperations,
    BatchOperations,
    JobStore,
):
    """JobStore on MongoDB 6+ or FerretDB 1.24, through pymongo."""

    name = "mongodb"

    def __init__(
        self,
        url: str,
        *,
        auto_migrate: bool = True,
        server_selection_timeout: float = 10.0,
        **client_options: Any,
    ) -> None:
        settings = parse_store_url(url)
        self._display = settings.display
        self._closed = False
        self._close_lock = threading.Lock()
        self._client: MongoClient[Doc] = MongoClient(
            settings.uri,
            appname=client_options.pop("appname", "ratchet"),
            serverSelectionTimeoutMS=int(server_selection_timeout * 1000),
            tz_aware=True,
            tzinfo=UTC,
            **client_options,
        )
        options: CodecOptions[Doc] = CodecOptions(tz_aware=True, tzinfo=UTC)
        self._db = self._client.get_database(settings.database, codec_options=options)
        self._jobs: Collection[Doc] = self._db[s.JOBS]
        self._archive: Collection[Doc] = self._db[s.ARCHIVE]
        self._tokens: Collection[Doc] = self._db[s.TOKENS]
        self._executions: Collection[Doc] = self._db[s.EXECUTIONS]
        self._idempotency: Collection[Doc] = self._db[s.IDEMPOTENCY_KEYS]
        self._business: Collection[Doc] = self._db[s.BUSINESS_KEYS]
        self._nodes: Collection[Doc] = self._db[s.NODES]
        self._locks: Collection[Doc] = self._db[s.LOCKS]
        self._recurring: Collection[Doc] = self._db[s.RECURRING]
        self._fires: Collection[Doc] = self._db[s.FIRES]
        self._job_logs: Collection[Doc] = self._db[s.JOB_LOGS]
        self._job_progress: Collection[Doc] = self._db[s.JOB_PROGRESS]
        self._resources: Collection[Doc] = self._db[s.RESOURCES]
        self._paused_queues: Collection[Doc] = self._db[s.PAUSED_QUEUES]
        if auto_migrate:
            try:
                s.create_indexes(self._db)
            except ConnectionFailure as exc:
                self._client.close()
                raise StoreUnavailableError(
                    f"MongoDB store {self._display} is unreachable: {exc}"
                ) from exc

    @classmethod
    def from_url(cls, url: str, *, auto_migrate: bool = True, **options: Any) -> MongoDBJobStore:
        """``mongodb://host:27017/dbname`` or ``mongodb+srv://…``; see the README.

        Options: ``server_selection_timeout`` (seconds, default 10); unknown options are
        ignored, as Ratchet's factory contract requires.
        """
        timeout = float(options.get("server_selection_timeout", 10.0))
        return cls(url, auto_migrate=auto_migrate, server_selection_timeout=timeout)

    def describe(self) -> str:
        return self._display

    def close(self) -> None:
        with self._close_lock:
            if not self._closed:
                self._closed = True
                self._client.close()

    @unavailable
    def reset_for_tests(self) -> None:
        """Delete every Ratchet document, keeping collections and indexes. Tests only."""
        self._check_open()
        for name in s.COLLECTIONS:
            self._db[name].delete_many({})
