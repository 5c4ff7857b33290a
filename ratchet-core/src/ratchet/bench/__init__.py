"""Measure Ratchet on your own store: the library behind ``ratchet bench``.

```python
from ratchet.bench import SIZES, BenchConfig, run_bench

report = run_bench(BenchConfig(store_url="postgresql://…/scratch", sizes=SIZES["quick"]))
print(report["markdown"])
```

Ratchet-only cells that work on any installed store (:data:`CELLS`): single and bulk
enqueue, drains by 1 and 2 worker processes verified job by job, and enqueue-to-start
latency through the active coordinator (or polling alone). The store must be a scratch
store: see :mod:`ratchet.bench._scratch`. Nothing here asserts a time; a figure is valid
only when the work behind it was done. The repository's ``benchmarks/run.py`` (Ratchet
against other queues) reuses the process protocol, statistics and coordinator checks.
"""

from __future__ import annotations

from ratchet.bench._cells import CELLS, SIZES, BenchSession, BenchSizes
from ratchet.bench._coordinators import (
    POLL_ONLY,
    CoordinatorMismatchError,
    coordinator_name,
    require_available,
    require_coordinator,
    wait_until_subscribed,
)
from ratchet.bench._process import CellError, CellProcess, emit, read_commands
from ratchet.bench._report import load_warning, markdown, summarise
from ratchet.bench._runner import BenchConfig, run_bench
from ratchet.bench._scratch import (
    ScratchStoreError,
    StoreContents,
    check_scratch_url,
    empty_scratch_store,
)
from ratchet.bench._stats import median, now_ns, percentile
from ratchet.bench._verify import DrainCheck, verify_drain

__all__ = [
    "CELLS",
    "POLL_ONLY",
    "SIZES",
    "BenchConfig",
    "BenchSession",
    "BenchSizes",
    "CellError",
    "CellProcess",
    "CoordinatorMismatchError",
    "DrainCheck",
    "ScratchStoreError",
    "StoreContents",
    "check_scratch_url",
    "coordinator_name",
    "emit",
    "empty_scratch_store",
    "load_warning",
    "markdown",
    "median",
    "now_ns",
    "percentile",
    "read_commands",
    "require_available",
    "require_coordinator",
    "run_bench",
    "summarise",
    "verify_drain",
    "wait_until_subscribed",
]
