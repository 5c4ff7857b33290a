"""The producer's resident memory while it submits a streaming batch (issue 18).

Submits ``--items`` children with ``app.streaming_batch(...).from_iterable(gen)`` (a
generator: nothing is held but the current chunk) to a scratch store, and prints the
process's VmRSS (``/proc/self/status``) sampled at every chunk's progress report, as one
JSON object: the first sample, the peak and the last, with the time taken. Flat memory
shows as a peak close to the first sample however many items go in. Nothing is asserted.

    uv run python benchmarks/streaming_batch_rss.py --store sqlite:////tmp/stream.db --items 1000000
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator

from ratchet import Ratchet, StreamingBatchProgress
from ratchet.spi import SupportsTestReset


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="a scratch store (its jobs are erased)")
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=500)
    args = parser.parse_args()
    app = Ratchet(args.store, coordinator="none")
    if isinstance(app.store, SupportsTestReset):
        app.store.reset_for_tests()

    @app.job(name="child")
    def child(n: int) -> int:
        return n

    def items() -> Iterator[int]:
        yield from range(args.items)

    samples: list[int] = []

    def sample(_progress: StreamingBatchProgress) -> None:
        samples.append(rss_kib())

    started = time.perf_counter()
    report = (
        app.streaming_batch("rss")
        .from_iterable(items())
        .process(child)
        .chunk_size(args.chunk)
        .on_progress(sample)
        .start()
    )
    elapsed = time.perf_counter() - started
    print(
        json.dumps(
            {
                "store": app.store.describe(),
                "items": report.stored,
                "chunk": args.chunk,
                "seconds": round(elapsed, 1),
                "first_chunk_rss_mib": round(samples[0] / 1024, 1),
                "peak_rss_mib": round(max(samples) / 1024, 1),
                "last_rss_mib": round(samples[-1] / 1024, 1),
            }
        )
    )
    if isinstance(app.store, SupportsTestReset):
        app.store.reset_for_tests()
    app.close()


if __name__ == "__main__":
    main()
