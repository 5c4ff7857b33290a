"""A real server restart: the store raises StoreUnavailableError while the server is down
and works again, with nothing lost, once it is back, without being reopened.

The shared test server cannot be restarted under other people's tests, so this starts a
private, throwaway MariaDB (``mariadb-install-db`` + ``mariadbd`` from the server package
that ``scripts/services up mariadb`` installs) on a free port of 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from ratchet.errors import StoreUnavailableError
from ratchet.spi import JobStatus
from ratchet_store_mysql import MySQLJobStore
from ratchet_tck.servers import PrivateServer
from ratchet_tck.store import new_job

pytestmark = [pytest.mark.server, pytest.mark.slow]

INSTALL_DB = shutil.which("mariadb-install-db")
SERVER = shutil.which("mariadbd") or (
    "/usr/sbin/mariadbd" if os.path.exists("/usr/sbin/mariadbd") else None
)


class PrivateMariaDB(PrivateServer):
    """One mariadbd on its own data directory and port; stop() and start() at will."""

    start_attempts = 600  # a fresh server answers within seconds
    start_interval = 0.05
    stop_timeout = 60.0

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        subprocess.run(
            [str(INSTALL_DB), "--no-defaults", f"--datadir={root / 'data'}", "--skip-test-db",
             "--auth-root-authentication-method=normal", "--user=root"],
            check=True, capture_output=True,
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"mysql://ratchet:secret-pw@127.0.0.1:{self.port}/ratchet?connect_timeout=2"

    def command(self) -> list[str]:
        return [str(SERVER), "--no-defaults", f"--datadir={self.root / 'data'}",
                f"--port={self.port}", "--bind-address=127.0.0.1", f"--socket={self.root / 'sock'}",
                f"--pid-file={self.root / 'pid'}", "--user=root", "--skip-name-resolve",
                "--innodb-buffer-pool-size=16M", "--skip-log-bin"]  # fmt: skip

    def answers(self) -> bool:
        try:
            pymysql.connect(unix_socket=str(self.root / "sock"), user="root").close()
        except pymysql.err.OperationalError:
            return False
        return True

    def setup_user(self) -> None:
        conn = pymysql.connect(unix_socket=str(self.root / "sock"), user="root", autocommit=True)
        with conn, conn.cursor() as cursor:
            cursor.execute("CREATE USER 'ratchet'@'127.0.0.1' IDENTIFIED BY 'secret-pw'")
            cursor.execute("CREATE DATABASE ratchet")
            cursor.execute("GRANT ALL ON ratchet.* TO 'ratchet'@'127.0.0.1'")


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[PrivateMariaDB]:
    if INSTALL_DB is None or SERVER is None:
        pytest.skip("mariadbd is not installed: run `scripts/services up mariadb` first")
    with PrivateMariaDB(tmp_path).running() as server:
        server.setup_user()
        yield server


def test_the_store_survives_a_server_restart(private_server: PrivateMariaDB) -> None:
    """Jobs and claims made before a restart are all there after it; while the server is
    down calls raise StoreUnavailableError without the password; after it is back the
    pool replaces its dead connections and the next calls succeed."""
    store = MySQLJobStore.from_url(private_server.url, pool_max_size=3)
    try:
        jobs = [new_job() for _ in range(6)]
        store.enqueue_many(jobs)
        claimed = store.claim_due_jobs(node_id="n", limit=2, priority_boost_seconds=0)
        private_server.stop()
        with pytest.raises(StoreUnavailableError) as down:
            store.count_jobs()
        assert "secret-pw" not in str(down.value) and store.describe() in str(down.value)
        private_server.start()
        counts = store.count_jobs()
        assert (counts[JobStatus.PENDING], counts[JobStatus.RUNNING]) == (4, 2)
        for job in claimed:  # the fencing tokens issued before the restart still hold
            assert store.complete_job(job.id, job.claim_seq, result_json=None, result_type=None)
        rest = store.claim_due_jobs(node_id="n", limit=10, priority_boost_seconds=0)
        assert sorted(j.id for j in [*claimed, *rest]) == sorted(j.id for j in jobs)
    finally:
        store.close()
