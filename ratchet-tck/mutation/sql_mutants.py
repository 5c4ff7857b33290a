"""Mutation testing of the SQLite store's SQL, with the store kit as the test suite.

mutmut mutates Python inside functions and never touches the named statements of
``ratchet/stores/sqlite/queries.sql``, yet most of the store's contract is written in
them (status guards, fences, claim order, cut-offs). This script fills that gap with a
small set of SQL operators, applied one at a time: a comparison made strict or loose
(``<=`` and ``<``), ``=`` and ``<>`` in a WHERE clause, ``AND`` and ``OR``, ``+`` and
``-``, ``DESC`` and ``ASC``, ``MAX`` and ``MIN``, ``EXISTS`` negated, ``IS NULL``
flipped, a status literal swapped for its neighbour, ``INSERT OR IGNORE``/``OR REPLACE``
made a plain ``INSERT``, a ``LIMIT`` dropped.

How it runs (``nox -s mutants`` calls it; see ratchet-tck/MUTATION.md):

1. ``WORK/src`` is a copy of ``ratchet-core/src`` (the session makes it); nothing in the
   working tree is touched.
2. A stats run of the kit records which statements each test reads (lookups by name in
   :class:`ratchet.spi.sql.Statements` are traced: the store reads them at call time).
3. Each mutant appends ``STATEMENTS = STATEMENTS.replacing(name=<mutated text>)`` to the
   copy's ``_statements.py`` (so the statement is mutated as loaded, generated pieces
   included) and runs, with ``-x``, only the tests that read it, fastest first. Child
   processes see the mutant too (``PYTHONPATH``).

Usage: ``python sql_mutants.py WORK [MUTANT ...]``, with mutant names such as
``sql.CLAIM_JOB.3`` (the statement ``claim_job``, upper-cased) or globs
(``'sql.CLAIM_*'``); ``--list`` prints the mutants only.
Results go to ``WORK/sql-mutants.json``; survivors are printed with their diff.
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

STATEMENTS = Path("src/ratchet/stores/sqlite/_statements.py")
SUITE = "tests/test_builtin_stores.py::TestSQLiteStore"

# (pattern, replacement, where): where "any" applies anywhere outside quoted literals,
# "where" only inside a WHERE clause (so ``SET a = b`` is not turned into a syntax error).
OPERATORS: list[tuple[str, str, str]] = [
    (r"<=", "<", "any"),
    (r"(?<![<>])<(?![=>])", "<=", "any"),
    (r">=", ">", "any"),
    (r"(?<![<>])>(?!=)", ">=", "any"),
    (r"<>", "=", "any"),
    (r"(?<![<>!])=(?!=)", "<>", "where"),
    (r"\bAND\b", "OR", "any"),
    (r"\bOR\b(?! (?:IGNORE|REPLACE)\b)", "AND", "where"),
    (r" \+ ", " - ", "any"),
    (r" - ", " + ", "any"),
    (r"\bDESC\b", "ASC", "any"),
    (r"\bMAX\(", "MIN(", "any"),
    (r"\bMIN\(", "MAX(", "any"),
    (r"\bNOT EXISTS\b", "EXISTS", "any"),
    (r"\bNOT \(", "(", "any"),
    (r"\bIS NULL\b", "IS NOT NULL", "any"),
    (r"\bIS NOT NULL\b", "IS NULL", "any"),
    (r"\bINSERT OR (?:IGNORE|REPLACE)\b", "INSERT", "any"),
    (r" LIMIT :limit\b", "", "any"),
]

# A status literal swapped for the status next to it in the job's life.
STATUS_SWAPS = {
    "'PENDING'": "'RUNNING'",
    "'RUNNING'": "'PENDING'",
    "'SUCCEEDED'": "'FAILED'",
    "'FAILED'": "'SUCCEEDED'",
    "'CANCELED'": "'FAILED'",
    "'RELEASED'": "'FAILED'",
}

READS_PLUGIN = '''
"""Records which named statements each test reads (written by sql_mutants.py)."""
import json, os
from ratchet.spi.sql import Statements

READS = set()
BY_TEST = {}
_lookup = Statements.__getitem__


def _traced(self, name):
    READS.add(name.upper())
    return _lookup(self, name)


Statements.__getitem__ = _traced


def pytest_runtest_setup(item):
    READS.clear()


def pytest_runtest_logreport(report):
    if report.when == "call":
        entry = BY_TEST.setdefault(report.nodeid, {"reads": [], "duration": 0.0})
        entry["duration"] = report.duration


def pytest_runtest_teardown(item):
    BY_TEST.setdefault(item.nodeid, {"reads": [], "duration": 0.0})["reads"] = sorted(READS)


def pytest_sessionfinish(session):
    with open(os.environ["RATCHET_SQL_READS"], "w") as out:
        json.dump(BY_TEST, out, indent=1)
'''


@dataclass(frozen=True, kw_only=True, slots=True)
class Mutant:
    name: str
    constant: str
    operator: str
    original: str
    mutated: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    name: str
    status: str  # killed, survived, no tests, timeout, suspicious
    seconds: float
    tests_run: int
    killed_by: str | None


def constants(work: Path) -> dict[str, str]:
    """Every statement of the copy's store, as loaded (fragments filled), by upper-cased
    name: read in a child process, on the copy."""
    code = (
        "import json; from ratchet.stores.sqlite.testing import named_statements; "
        "print(json.dumps({k.upper(): v for k, v in named_statements.items()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_environment(work),
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: dict[str, str] = json.loads(done.stdout)
    return loaded


def _literal_spans(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in re.finditer(r"'[^']*'", text)]


def _where_spans(text: str) -> list[tuple[int, int]]:
    """From each WHERE (or JOIN ... ON) to the end of its clause."""
    spans = []
    for match in re.finditer(r"\bWHERE\b|\bON\b(?! CONFLICT)", text):
        end = re.search(r"\b(ORDER BY|GROUP BY|LIMIT|RETURNING|DO UPDATE)\b", text[match.end() :])
        spans.append((match.end(), match.end() + end.start() if end else len(text)))
    return spans


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _units(text: str) -> list[int]:
    """Where the per-priority-level subqueries of a ``UNION ALL`` start: they differ only
    in the level, so a mutation is made in every one of them at once, as a slip in the
    one function that writes them (``_due_at_level``) would be."""
    return [match.start() for match in re.finditer(r"SELECT \* FROM \(", text)]


def _everywhere(text: str, start: int, end: int, replacement: str) -> str:
    """Replace ``text[start:end]``, and the same text at the same place of every other
    level's subquery when it lies in one."""
    units = _units(text)
    spots = [start]
    if len(units) > 1:
        length = units[1] - units[0] - len(" UNION ALL ")
        home = next((u for u in units if u <= start < u + length), None)
        if home is not None:
            spots = [u + start - home for u in units]
    found = text[start:end]
    for spot in sorted(spots, reverse=True):
        if text[spot : spot + len(found)] == found:
            text = text[:spot] + replacement + text[spot + len(found) :]
    return text


def mutants_of(constant: str, text: str) -> Iterator[Mutant]:
    literals = _literal_spans(text)
    where = _where_spans(text)
    candidates: list[tuple[int, str, str]] = []
    for pattern, replacement, scope in OPERATORS:
        for match in re.finditer(pattern, text):
            if _inside(match.start(), literals):
                continue
            if scope == "where" and not _inside(match.start(), where):
                continue
            mutated = _everywhere(text, match.start(), match.end(), replacement)
            operator = f"{match.group(0).strip()} -> {replacement.strip()}"
            candidates.append((match.start(), operator, mutated))
    for literal, replacement in STATUS_SWAPS.items():
        for match in re.finditer(re.escape(literal), text):
            mutated = _everywhere(text, match.start(), match.end(), replacement)
            candidates.append((match.start(), f"{literal} -> {replacement}", mutated))
    seen: set[str] = set()
    for _position, operator, mutated in sorted(candidates):
        if mutated in seen:
            continue
        seen.add(mutated)
        yield Mutant(
            name=f"sql.{constant}.{len(seen) - 1}",
            constant=constant,
            operator=operator,
            original=text,
            mutated=mutated,
        )


def all_mutants(work: Path) -> list[Mutant]:
    return [m for name, text in constants(work).items() for m in mutants_of(name, text)]


def diff(mutant: Mutant) -> str:
    lines = difflib.unified_diff(
        mutant.original.strip().splitlines(),
        mutant.mutated.strip().splitlines(),
        lineterm="",
        n=0,
    )
    return "\n".join(line for line in lines if not line.startswith(("---", "+++", "@@")))


def _environment(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(work / "src"), str(work)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a mutant may keep the size and second of the last
    return env


def _pytest(work: Path, tests: list[str], *extra: str, timeout: float) -> tuple[int, str]:
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    command += ["--rootdir", str(work), "-o", "timeout=120", *extra]
    command += ["--ratchet-tck-report", str(work / "ratchet-tck-report.md"), *tests]
    try:
        done = subprocess.run(
            command,
            cwd=work,
            env=_environment(work),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, ""
    return done.returncode, done.stdout


@dataclass(frozen=True, kw_only=True, slots=True)
class Reads:
    reads: frozenset[str]
    seconds: float


def collect_reads(work: Path) -> dict[str, Reads]:
    (work / "ratchet_sql_reads.py").write_text(READS_PLUGIN)
    reads = work / "sql-reads.json"
    os.environ["RATCHET_SQL_READS"] = str(reads)
    code, output = _pytest(work, [SUITE], "-p", "ratchet_sql_reads", timeout=900)
    if code != 0:
        sys.exit(f"The kit does not pass on the unmutated store:\n{output[-3000:]}")
    return {
        test: Reads(reads=frozenset(entry["reads"]), seconds=float(entry["duration"]))
        for test, entry in json.loads(reads.read_text()).items()
    }


def run_mutant(
    work: Path, mutant: Mutant, original_source: str, stats: dict[str, Reads]
) -> Outcome:
    tests = sorted(
        (test for test, entry in stats.items() if mutant.constant in entry.reads),
        key=lambda test: stats[test].seconds,
    )
    if not tests:
        return Outcome(name=mutant.name, status="no tests", seconds=0, tests_run=0, killed_by=None)
    budget = sum(stats[test].seconds for test in tests)
    statements = work / STATEMENTS
    statements.write_text(
        original_source
        + f"\n\nSTATEMENTS = STATEMENTS.replacing({mutant.constant.lower()}={mutant.mutated!r})"
        + f"  # mutant {mutant.name}\n"
    )
    started = time.monotonic()
    try:
        code, output = _pytest(work, tests, timeout=30 + 5 * budget)
    finally:
        statements.write_text(original_source)
    seconds = round(time.monotonic() - started, 1)
    failed = re.search(r"^FAILED (\S+)", output, re.MULTILINE)
    status = {-1: "timeout", 0: "survived", 1: "killed"}.get(code, "suspicious")
    return Outcome(
        name=mutant.name,
        status=status,
        seconds=seconds,
        tests_run=len(tests),
        killed_by=failed.group(1).rsplit("::", 1)[-1] if failed else None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path, help="folder holding src/ (a copy) and tests/")
    parser.add_argument("names", nargs="*", help="mutant names or globs (default: all)")
    parser.add_argument("--list", action="store_true", help="print the mutants and stop")
    args = parser.parse_args()
    work: Path = args.work.resolve()
    original_source = (work / STATEMENTS).read_text()
    mutants = all_mutants(work)
    if args.names:
        mutants = [m for m in mutants if any(fnmatch.fnmatch(m.name, n) for n in args.names)]
        if not mutants:
            sys.exit(f"No SQL mutant matches {args.names!r}; see --list.")
    if args.list:
        for mutant in mutants:
            print(f"{mutant.name}: {mutant.operator}\n{diff(mutant)}\n")
        return

    print(f"SQL mutants: {len(mutants)}; recording which tests read which statement")
    stats = collect_reads(work)
    results_file = work / "sql-mutants.json"
    earlier = json.loads(results_file.read_text()) if results_file.exists() else {}
    for number, mutant in enumerate(mutants, 1):
        outcome = run_mutant(work, mutant, original_source, stats)
        earlier[mutant.name] = {**asdict(outcome), "operator": mutant.operator}
        results_file.write_text(json.dumps(earlier, indent=1, sort_keys=True))
        progress = f"[{number}/{len(mutants)}]"
        print(f"{progress} {outcome.status:<10} {outcome.seconds:6.1f}s {mutant.name}", flush=True)

    by_name = {m.name: m for m in all_mutants(work)}
    counts: dict[str, int] = {}
    for result in earlier.values():
        counts[result["status"]] = counts.get(result["status"], 0) + 1
    print("\nSQL mutants (all recorded runs):", json.dumps(counts, sort_keys=True))
    for name, result in sorted(earlier.items()):
        if result["status"] != "killed" and name in by_name:
            print(f"\n{result['status']}: {name} ({result['operator']})\n{diff(by_name[name])}")


if __name__ == "__main__":
    main()
