"""Summarise py-spy raw (collapsed) profiles: ``python benchmarks/profile_summary.py FILE…``.

``run.py --profile DIR`` writes one file per profiled Ratchet process. This prints, over
all given files, where the samples went: per thread kind (``ratchet-job-3`` counts as
``ratchet-job``), the functions with the most samples including their callees
(inclusive), and the leaf frames (self). py-spy leaves out idle samples (a thread blocked
in a socket read or a wait), so the shares are of CPU-active samples.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

THREAD = re.compile(r"^thread \(\d+\): (.*)$")
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]+):\d+\)$")


def frames(stack: str) -> tuple[str, list[str]]:
    parts = stack.split(";")
    thread = "?"
    match = THREAD.match(parts[0])
    if match:
        thread = re.sub(r"[-_]?\d+$", "", match.group(1))
        parts = parts[1:]
    out = []
    for part in parts:
        m = FRAME.match(part)
        out.append(f"{m.group('func')} ({m.group('file')})" if m else part)
    return thread, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--thread", help="only threads whose kind contains this text")
    args = parser.parse_args()
    by_thread: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    total = 0
    for path in args.files:
        for line in path.read_text().splitlines():
            stack, _, count_text = line.rpartition(" ")
            if not stack:
                continue
            count = int(count_text)
            thread, stack_frames = frames(stack)
            if args.thread and args.thread not in thread:
                continue
            total += count
            by_thread[thread] += count
            for name in set(stack_frames):
                inclusive[name] += count
            if stack_frames:
                leaf[stack_frames[-1]] += count
    if not total:
        print("no samples")
        return 1
    print(f"{total} active samples in {len(args.files)} file(s)\n")
    print("By thread kind:")
    for name, n in by_thread.most_common():
        print(f"  {100 * n / total:5.1f}%  {name}")
    print(f"\nInclusive (top {args.top}):")
    for name, n in inclusive.most_common(args.top):
        print(f"  {100 * n / total:5.1f}%  {name}")
    print(f"\nSelf / leaf frames (top {args.top}):")
    for name, n in leaf.most_common(args.top):
        print(f"  {100 * n / total:5.1f}%  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
