"""Conformance-kit harness for the LISTEN/NOTIFY coordinator (``ratchet-tck certify
--coordinator pg``): a real server; the transport is broken by terminating the listening
connections with ``pg_terminate_backend`` and blocking new ones; raw payloads are sent with
``pg_notify`` from a separate connection. The worker process of the wakeup contract uses
a SQLite store and reaches the server through ``RATCHET_PG_COORDINATOR_URL``, on the
harness's own channel. Nothing here restarts the shared server.

The server is the coordinator's own setting, ``RATCHET_PG_COORDINATOR_URL`` (unless the
harness is given a URL). Imported only by the kit (``ratchet-tck``, this package's ``tck``
extra), never by the runtime."""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Any

import psycopg

from ratchet.spi import ClusterCoordinator
from ratchet_coordinator_pg._config import URL_VARIABLE
from ratchet_coordinator_pg.coordinator import PostgreSQLClusterCoordinator
from ratchet_tck import Capabilities, CoordinatorHarness, WorkerProcess
from ratchet_tck.coordinator import processed_count, wait_until_processed


class PostgreSQLHarness(CoordinatorHarness):
    """Each harness uses its own channel, so concurrent runs do not hear each other."""

    max_latency = 2.0
    capabilities = Capabilities(transport_failure=True, raw_injection=True, separate_processes=True)

    def __init__(self, url: str | None = None) -> None:
        url = url or os.environ.get(URL_VARIABLE)
        if not url:
            raise RuntimeError(f"Set {URL_VARIABLE} to the PostgreSQL server's URL.")
        self.conninfo = "postgresql://" + url.partition("://")[2]
        self.channel = f"ratchet_tck_{uuid.uuid4().hex[:16]}"
        self.made: list[PostgreSQLClusterCoordinator] = []
        self._stop_killing = threading.Event()
        self._killer: threading.Thread | None = None

    def create(self, node_id: str) -> ClusterCoordinator:
        coordinator = PostgreSQLClusterCoordinator(self.conninfo, node_id, channel=self.channel)
        self.made.append(coordinator)
        return coordinator

    def _terminate_listeners(self) -> None:
        names = [name for c in self.made for name in c.application_names]
        with psycopg.connect(self.conninfo, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = ANY(%s) AND pid <> pg_backend_pid()",
                (names,),
            )

    def break_transport(self) -> None:
        """Kill the coordinators' connections (listening and sending), and keep killing
        their reconnections until restored; notify attempts meanwhile must not raise."""
        self._stop_killing.clear()

        def keep_killing() -> None:
            while not self._stop_killing.wait(0.05):
                self._terminate_listeners()

        self._terminate_listeners()
        self._killer = threading.Thread(target=keep_killing, daemon=True)
        self._killer.start()

    def restore_transport(self) -> None:
        self._stop_killing.set()
        if self._killer is not None:
            self._killer.join()
        deadline = time.monotonic() + 30
        while not all(c.ready for c in self.made if not c.closed):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)

    def inject_raw(self, coordinator: ClusterCoordinator, payload: Any) -> None:
        before = processed_count(coordinator)
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            conn.execute("SELECT pg_notify(%s, %s)", (self.channel, payload))
        wait_until_processed(coordinator, before, self.max_latency)

    def worker_process(self) -> WorkerProcess:
        """A worker on a SQLite store, hinted over this server on this harness's channel."""
        return WorkerProcess(
            coordinator="pg",
            coordinator_class=PostgreSQLClusterCoordinator.__name__,
            environment={
                "RATCHET_PG_COORDINATOR_URL": self.conninfo,
                "RATCHET_PG_CHANNEL": self.channel,
            },
        )

    def close(self) -> None:
        self._stop_killing.set()
        for coordinator in self.made:
            coordinator.close()
