"""Default job names of functions defined in the running script (module ``__main__``).

A producer run as ``python myjobs.py`` and a worker importing ``myjobs`` must agree on the
job's name and target, or the worker dead-letters the job; a script no other process can
import is refused at decoration unless the job has an explicit name.
"""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from ratchet import JobStatus, Ratchet
from ratchet._imports import main_module_import_name

JOBS_MODULE = """
from ratchet import Ratchet

app = Ratchet({store_url!r}, coordinator="none")


@app.job
def work(n):
    return n * 2


if __name__ == "__main__":
    print(work.definition.name, work.definition.target, work.enqueue(21))
"""


def python(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, *args],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_job_enqueued_by_the_script_runs_on_a_worker_that_imports_it(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Without the script's module name, the job would be '__main__:work', unknown to the
    worker's registry and not importable: dead-lettered. Look at job_target in _jobs.py."""
    (tmp_path / "myjobs.py").write_text(JOBS_MODULE.format(store_url=sqlite_url))
    produced = python(tmp_path, "myjobs.py")
    assert produced.returncode == 0, produced.stderr
    name, target, job_id = produced.stdout.split()
    assert (name, target) == ("myjobs:work", "myjobs:work")

    worked = python(tmp_path, "-c", "import myjobs; myjobs.app.run_until_idle(timeout=30)")
    assert worked.returncode == 0, worked.stderr
    with Ratchet(sqlite_url, coordinator="none") as app:
        job = app.get_job(job_id)
    assert job is not None
    assert (job.status, job.result) == (JobStatus.SUCCEEDED, 42), job.last_error


def test_python_dash_m_names_jobs_after_the_module(tmp_path: Path, sqlite_url: str) -> None:
    (tmp_path / "myjobs.py").write_text(JOBS_MODULE.format(store_url=sqlite_url))
    produced = python(tmp_path, "-m", "myjobs")
    assert produced.returncode == 0, produced.stderr
    assert produced.stdout.split()[:2] == ["myjobs:work", "myjobs:work"]


@pytest.mark.parametrize("how", ["-c", "unimportable file"])
def test_a_job_in_an_unimportable_main_is_refused_at_decoration(
    tmp_path: Path, sqlite_url: str, how: str
) -> None:
    code = JOBS_MODULE.format(store_url=sqlite_url)
    if how == "-c":
        result = python(tmp_path, "-c", code)
        where = "an interactive session, a notebook or 'python -c'"
    else:
        (tmp_path / "my-jobs.py").write_text(code)
        result = python(tmp_path, "my-jobs.py")
        where = "which cannot be imported under its file name"
    assert result.returncode == 1
    assert "JobDefinitionError: Job function 'work' is defined in" in result.stderr
    assert where in result.stderr
    assert "Move the job into a module" in result.stderr
    assert "@app.job(name='work')" in result.stderr


def test_an_explicit_name_is_accepted_in_an_unimportable_main(
    tmp_path: Path, sqlite_url: str
) -> None:
    code = JOBS_MODULE.format(store_url=sqlite_url).replace("@app.job\n", "@app.job(name='w')\n")
    result = python(tmp_path, "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:2] == ["w", "__main__:work"]


def test_main_module_import_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A script counts as importable only when its name is an identifier and importing
    that name from sys.path loads the same file; ``python -m`` gives the spec's name."""
    script = tmp_path / "spawned_script.py"
    script.write_text("")
    fake = types.ModuleType("__mp_main__")
    fake.__file__ = str(script)
    fake.__spec__ = None
    monkeypatch.setitem(sys.modules, "__mp_main__", fake)
    assert main_module_import_name("__mp_main__") is None  # its folder is not on sys.path
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main_module_import_name("__mp_main__") == "spawned_script"
    (tmp_path / "elsewhere").mkdir()
    fake.__file__ = str(tmp_path / "elsewhere" / "spawned_script.py")  # same name, other file
    assert main_module_import_name("__mp_main__") is None
    fake.__spec__ = importlib.machinery.ModuleSpec("pkg.tool", None)
    assert main_module_import_name("__mp_main__") == "pkg.tool"
    del fake.__file__
    fake.__spec__ = None
    assert main_module_import_name("__mp_main__") is None  # python -c, a notebook


def test_jobs_in_ordinary_modules_keep_module_and_qualname(app: Ratchet) -> None:
    job = app.job(textwrap.dedent)
    assert job.definition.name == job.definition.target == "textwrap:dedent"
