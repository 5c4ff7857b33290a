"""The repository README's code blocks, executed exactly as written.

Every ```python and ```sh block runs in a fresh directory, in README order, as separate
processes with this workspace's ``python``, ``ratchet`` and ``ratchet-tck`` first on PATH
and no ``RATCHET_*`` variables set. An HTML comment right before a block says how to run it
when the default (sh: ``bash -e``; python: run as a script) does not fit:

- ``<!-- readme-test: file -->``: a python block whose first line is ``# NAME.py`` is saved
  as NAME.py (later blocks import or run it).
- ``<!-- readme-test: excerpt of NAME.py: run appended to a copy of it -->``: the block
  continues that module; it is appended to a copy, which is imported.
- ``<!-- readme-test: run until every job has finished, then stop with SIGTERM -->``: a
  long-running command (a worker), stopped once the store holds no unfinished job.
- ``<!-- readme-test: run in a fresh virtual environment, next to a copy of ratchet-core -->``:
  for the install command; a new venv is first on PATH.
- ``<!-- readme-test: skip (REASON) -->``: not run; the reason is required.

A block in another language, a marker nobody understands, or a skip without a reason
fails the test: every block is executed or explicitly skipped. Unlabelled fences are text
(the repository tree) and are not code.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ratchet import JobStatus
from ratchet.plugins import PluginRegistry

REPOSITORY = Path(__file__).resolve().parents[2]
README = REPOSITORY / "README.md"
WORKSPACE_BIN = Path(sys.executable).parent

MARKER = re.compile(r"^<!-- readme-test: (?P<directive>.*?) -->$")
SKIP = re.compile(r"^skip \((?P<reason>.*\S.*)\)$")
EXCERPT = re.compile(r"^excerpt of (?P<module>\w+\.py): run appended to a copy of it$")
FILE_NAME = re.compile(r"^# (?P<name>\w+\.py)$")
FILE = "file"
UNTIL_FINISHED = "run until every job has finished, then stop with SIGTERM"
FRESH_VENV = "run in a fresh virtual environment, next to a copy of ratchet-core"
RUN = "run"  # the default of an unmarked python or sh block
SHELLS = ("sh", "bash", "shell")
CODE_LANGUAGES = ("python", *SHELLS)
FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELED)
BLOCK_TIMEOUT_SECONDS = 300
"""A hang guard, not a performance bound. The longest block is the README's full
``ratchet-tck certify`` of SQLite: about 40 s alone, and twice that beside the rest of the
suite on two cores; it grows with the kit, so a bound near it fails CI on load alone."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Block:
    """One fenced code block of the README and how the test runs it."""

    line: int
    language: str
    text: str
    action: str  # FILE, UNTIL_FINISHED, FRESH_VENV, RUN, "skip" or "excerpt"
    argument: str = ""  # the skip reason, the excerpt's module or the file name

    def __str__(self) -> str:
        return f"README.md line {self.line} ({self.language}, {self.action})"


def parse_blocks(markdown: str) -> list[Block]:
    """Every fenced block with a language, classified; raises ValueError naming the line
    of a block that would be neither executed nor skipped with a reason."""
    blocks: list[Block] = []
    lines = markdown.splitlines()
    directive: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = MARKER.match(line)
        if marker:
            directive = marker["directive"].strip()
        elif line.startswith("```"):
            language, start = line[3:].strip(), index + 1
            index += 1
            while index < len(lines) and not lines[index].startswith("```"):
                index += 1
            text = "\n".join(lines[start:index]) + "\n"
            if language or directive is not None:
                blocks.append(_classify(start, language, text, directive))
            directive = None
        elif line.strip():
            directive = None  # a marker applies only to the block right after it
        index += 1
    return blocks


def _classify(line: int, language: str, text: str, directive: str | None) -> Block:
    where = f"README.md line {line} ({language or 'no language'})"
    if directive is not None and (skip := SKIP.match(directive)):
        return Block(line=line, language=language, text=text, action="skip", argument=skip[1])
    if language not in CODE_LANGUAGES:
        raise ValueError(
            f"{where}: a {language!r} block is neither run nor skipped. Use ```python or "
            "```sh, or put '<!-- readme-test: skip (REASON) -->' right before it."
        )
    if directive is None:
        return Block(line=line, language=language, text=text, action=RUN)
    if directive == FILE:
        name = FILE_NAME.match(text.splitlines()[0]) if language == "python" else None
        if name is None:
            raise ValueError(f"{where}: a 'file' block must be python starting '# NAME.py'.")
        return Block(line=line, language=language, text=text, action=FILE, argument=name[1])
    if excerpt := EXCERPT.match(directive):
        return Block(line=line, language=language, text=text, action="excerpt", argument=excerpt[1])
    if directive in (UNTIL_FINISHED, FRESH_VENV) and language in SHELLS:
        return Block(line=line, language=language, text=text, action=directive)
    raise ValueError(
        f"{where}: marker {directive!r} is not understood. Use 'skip (REASON)', {FILE!r}, "
        f"'excerpt of NAME.py: run appended to a copy of it', {UNTIL_FINISHED!r} or "
        f"{FRESH_VENV!r} (the last two for sh blocks)."
    )


def readme_blocks() -> list[Block]:
    return parse_blocks(README.read_text(encoding="utf-8"))


def environment(path_first: Path, **extra: str) -> dict[str, str]:
    """The user's environment without RATCHET_* (the README assumes the defaults)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")}
    env.pop("PYTHONPATH", None)
    env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def run_block(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if block.language in SHELLS:
        command = ["bash", "-e", "-c", block.text]
    else:
        script = cwd / f"readme_line_{block.line}.py"
        script.write_text(block.text)
        command = ["python", script.name]
    result = subprocess.run(
        command,
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_SECONDS,
    )
    assert result.returncode == 0, f"{block} failed:\n{block.text}\n{result.stdout}{result.stderr}"
    return result


def unfinished_jobs(store_url: str) -> int | None:
    """Jobs in the store not yet finished; ``None`` while the store holds no job at all."""
    store = PluginRegistry.load().create_store(store_url)
    try:
        jobs = store.list_jobs(limit=10_000)
    finally:
        store.close()
    return sum(1 for job in jobs if job.status not in FINISHED) if jobs else None


def run_until_finished(block: Block, cwd: Path, env: dict[str, str]) -> str:
    """Start the block, wait until the quickstart's store has no unfinished job, SIGTERM
    the block's process group and return its output (the command must exit 0)."""
    store_url = f"sqlite:///{cwd / 'ratchet.db'}"
    log = (cwd / f"readme_line_{block.line}.log").open("w+")
    process = subprocess.Popen(
        ["bash", "-e", "-c", block.text],
        cwd=cwd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while unfinished_jobs(store_url) != 0:
            assert process.poll() is None, f"{block} exited early"
            assert time.monotonic() < deadline, f"{block}: jobs still unfinished"
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    log.seek(0)
    output = log.read()
    log.close()
    assert process.returncode == 0, f"{block} exited {process.returncode}:\n{output}"
    return output


@pytest.fixture(scope="module")
def blocks() -> list[Block]:
    return readme_blocks()


def test_every_block_is_run_or_skipped_with_a_reason(blocks: list[Block]) -> None:
    """parse_blocks raises for a block neither run nor skipped; look at the line it names."""
    assert blocks, "no code blocks found in README.md"
    assert any(b.action == UNTIL_FINISHED for b in blocks)
    assert [b.argument for b in blocks if b.action == FILE] == ["myapp.py", "enqueue.py"]
    for block in blocks:
        if block.action == "skip":
            assert block.argument.strip(), block


@pytest.mark.parametrize(
    "markdown",
    [
        "```toml\nx = 1\n```\n",  # a language the test cannot run
        "<!-- readme-test: skip -->\n```sh\nratchet nodes\n```\n",  # no reason
        "<!-- readme-test: skip () -->\n```sh\nratchet nodes\n```\n",  # empty reason
        "<!-- readme-test: sometimes -->\n```sh\nratchet nodes\n```\n",  # unknown marker
        "<!-- readme-test: file -->\n```python\nprint(1)\n```\n",  # no file name
    ],
)
def test_the_parser_refuses_blocks_that_would_be_neither_run_nor_skipped(markdown: str) -> None:
    with pytest.raises(ValueError, match="README.md line"):
        parse_blocks(markdown)


def test_a_marker_applies_only_to_the_block_right_after_it() -> None:
    markdown = "<!-- readme-test: skip (why) -->\n\nProse.\n\n```sh\nratchet nodes\n```\n"
    assert [b.action for b in parse_blocks(markdown)] == [RUN]


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "readme"
    directory.mkdir()
    yield directory


@pytest.mark.slow
@pytest.mark.timeout(2 * BLOCK_TIMEOUT_SECONDS)  # the README's blocks together
def test_readme_blocks_run_as_written(blocks: list[Block], workdir: Path) -> None:
    """Runs every block except the install command (next test) in README order. A failure
    names the README line; the quickstart checks below say what its output must show."""
    env = environment(WORKSPACE_BIN)
    outputs: dict[str, str] = {}  # by block text
    for block in blocks:
        if block.action in ("skip", FRESH_VENV):
            continue
        if block.action == FILE:
            (workdir / block.argument).write_text(block.text)
        elif block.action == "excerpt":
            module = workdir / block.argument
            copy = module.with_name(f"{module.stem}_excerpt.py")
            copy.write_text(module.read_text() + "\n\n" + block.text)
            importing = f"python -c 'import {copy.stem}'\n"
            as_sh = Block(line=block.line, language="sh", text=importing, action=RUN)
            outputs[block.text] = run_block(as_sh, workdir, env).stdout
        elif block.action == UNTIL_FINISHED:
            outputs[block.text] = run_until_finished(block, workdir, env)
        else:
            outputs[block.text] = run_block(block, workdir, env).stdout
    text = "\n".join(outputs.values())
    # The producer ran twice: refund 43 once, its idempotency key refused the second time.
    assert text.count("refund 43: job ") == 1, text
    assert text.count("refund 43: already requested as job ") == 1, text
    assert text.count("refunds 0-99: 100 jobs") == 2, text
    store = PluginRegistry.load().create_store(f"sqlite:///{workdir / 'ratchet.db'}")
    try:
        jobs = store.list_jobs(limit=1000)
    finally:
        store.close()
    assert len(jobs) == 203  # 102 from the first run, 101 from the second
    assert {job.name for job in jobs} == {"myapp:process_refund"}
    assert {job.status for job in jobs} == {JobStatus.SUCCEEDED}
    (listing,) = [out for code, out in outputs.items() if code.startswith("ratchet jobs list")]
    (row,) = [line for line in listing.splitlines() if "myapp:process_refund" in line]
    assert "SUCCEEDED" in row and "HIGH" in row and "'refunded': True" in row, listing
    assert "compatible at level" in text  # ratchet-tck certify


@pytest.mark.slow
def test_install_and_demo_command_runs_as_written(blocks: list[Block], tmp_path: Path) -> None:
    """``pip install ./ratchet-core && ratchet demo`` in a new virtual environment, next to a
    copy of this checkout's ratchet-core. Skipped only when the package index is
    unreachable (pip needs it for hatchling, pluggy and croniter)."""
    (block,) = [b for b in blocks if b.action == FRESH_VENV]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    checkout = tmp_path / "checkout"
    shutil.copytree(
        REPOSITORY / "ratchet-core",
        checkout / "ratchet-core",
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "tests"),
    )
    env = environment(venv / "bin", VIRTUAL_ENV=str(venv))
    env.pop("PYTHONHOME", None)
    result = subprocess.run(
        ["bash", "-e", "-c", block.text],
        check=False,
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )
    output = result.stdout + result.stderr
    if result.returncode != 0 and re.search(
        r"NewConnectionError|Temporary failure in name resolution|Network is unreachable|"
        r"No matching distribution found for (hatchling|pluggy|croniter)",
        output,
    ):
        pytest.skip(f"the package index is unreachable, so pip cannot install: {output[-300:]}")
    assert result.returncode == 0, f"{block} failed:\n{output}"
    assert "Demo finished: every job ended as expected." in result.stdout
