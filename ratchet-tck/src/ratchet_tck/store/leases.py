"""ADVANCED: how long a lease lasts after it is re-acquired or renewed.

The engine keeps its singleton work (orphan scans, the recurring scheduler, the archiver)
by calling ``try_lock`` again before each round: re-acquiring a lease it holds must move
the expiry to database-now + ttl, or the lease lapses mid-round and another node starts
the same work. A renewal likewise sets database-now + ttl, and never shortens a lease:
a renewal with a shorter ttl than what is left keeps the later expiry.
"""

from __future__ import annotations

from ratchet.spi import JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreSuiteBase


class LeaseContracts(StoreSuiteBase):
    @contract("locks", Level.ADVANCED)
    def test_reacquiring_a_held_lock_extends_it(self, store: JobStore) -> None:
        """A 1 s lease re-acquired by its owner after 0.6 s lasts until 1.6 s: another owner
        is refused at 1.3 s (after the first lease's end) and gets it at 1.9 s.

        On failure: ``try_lock`` by the holder answers ``True`` without writing the new
        expiry (for example ``ON CONFLICT DO NOTHING`` followed by an owner check).
        """
        assert store.try_lock("lease", 1.0, "a")
        self.sleep_past(0.6)
        assert store.try_lock("lease", 1.0, "a")
        self.sleep_past(0.7)
        assert not store.try_lock("lease", 10, "b"), "re-acquiring did not extend the lease"
        self.sleep_past(0.6)
        assert store.try_lock("lease", 10, "b"), "the re-acquired lease outlived now + ttl"

    @contract("locks", Level.ADVANCED)
    def test_renewal_runs_from_the_time_of_renewal(self, store: JobStore) -> None:
        """A 1 s lease renewed for 1 s after 0.6 s lasts until 1.6 s: another owner is
        refused at 1.3 s and gets it at 1.9 s.

        On failure: the renewal computes the expiry from the acquisition time
        (``acquired_at + ttl``) or mixes units (milliseconds taken as seconds); it must be
        database-now + ttl.
        """
        assert store.try_lock("lease", 1.0, "a")
        self.sleep_past(0.6)
        assert store.renew_lock("lease", 1.0, "a")
        self.sleep_past(0.7)
        assert not store.try_lock("lease", 10, "b"), "the renewal shortened the lease"
        self.sleep_past(0.6)
        assert store.try_lock("lease", 10, "b"), "the renewed lease outlived now + ttl"

    @contract("locks", Level.ADVANCED)
    def test_renewal_never_shortens_a_lease(self, store: JobStore) -> None:
        """A 1.5 s lease renewed for 0.1 s at once keeps its later expiry: another owner is
        refused at 0.5 s and gets it after 1.5 s.

        On failure: the renewal writes database-now + ttl unconditionally; it must keep
        the later of the current expiry and database-now + ttl (``GREATEST``/``MAX``).
        """
        assert store.try_lock("lease", 1.5, "a")
        assert store.renew_lock("lease", 0.1, "a")
        self.sleep_past(0.5)
        assert not store.try_lock("lease", 10, "b"), "the renewal shortened the lease"
        self.sleep_past(1.3)
        assert store.try_lock("lease", 10, "b"), "the lease outlived its first expiry"
