"""PostgreSQL-specific behaviour beyond the kit: chunked batches stay all-or-nothing,
outcome text is always storable, and native types round-trip. The batch, key and lease
tests are the kit's (``ratchet_tck.store.shared.batches``), on this store's chunks."""

from __future__ import annotations

import pytest

from ratchet_store_postgresql import PostgreSQLJobStore
from ratchet_store_postgresql._enqueue import CHUNK_SIZE
from ratchet_tck.store.shared import batches
from ratchet_tck.store.shared.batches import *  # noqa: F403 (the kit's tests, on this module's hooks)

pytestmark = pytest.mark.server


@pytest.fixture
def enqueue_chunk_size() -> int:
    return CHUNK_SIZE


def test_an_error_text_with_nul_characters_is_still_recorded(store: PostgreSQLJobStore) -> None:
    """PostgreSQL text cannot hold U+0000; the outcome must not fail because of it (the job
    would stay RUNNING on a live node forever). NULs become U+FFFD."""
    batches.assert_error_text_is_recorded_as(store, "bad\x00byte", "bad\ufffdbyte")


def test_params_and_tags_use_native_types(store: PostgreSQLJobStore) -> None:
    params = {"tenant": "açme", "nested": {"list": [1, 2.5, None, True]}, "n": 3}
    batches.assert_params_and_tags_round_trip(store, params, ("b", "a"))
