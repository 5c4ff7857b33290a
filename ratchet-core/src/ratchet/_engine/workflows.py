"""Workflows in the engine: which branch of a step runs once the step has ended.

``app.builder(a).then_on_success(b).then_on_failure(c).when(pred, d)`` stores ``a`` with
the param :data:`~ratchet._jobs.BRANCHES_PARAM` and ``b``, ``c``, ``d`` as its WAITING
branches (``Job.branch``; the main line after ``a``, if any, as an ``"otherwise"``
branch). The store never releases a branch (:class:`ratchet.spi.SupportsWorkflows`):
once ``a`` has ended, :meth:`BranchResolver.resolve` reads its outcome as a
:class:`~ratchet.JobResult`, tries the conditions in order (priority, then definition
order, then id) and has the store release the first that matches and cancel the others
in one write; with none, the main line runs when ``a`` succeeded, else everything is
canceled. The recorder calls it after ``a``'s outcome (instead of canceling the rest of
the chain), the crash-limit and signal-timeout dead letters likewise, and the orphan
scan's :meth:`BranchResolver.recover` resolves what a crash in between left.

A ``when`` predicate is a function of the application (trusted) or an import path the
class policy allows, called with the result. One that raises cancels its branch (its
``last_error`` says why) and the others are tried. One that cannot be called here (its
module is not deployed on this node, the policy refuses it) or a result this node cannot
open leaves every branch WAITING for a node that can: the orphan scan tries again.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ratchet._engine.chains import cancel_rest_of_chain, job_result, read_job
from ratchet._engine.failure_text import summarize_failure
from ratchet._engine.lifecycle import Lifecycle
from ratchet._engine.targets import resolve_untrusted_target
from ratchet._logs import get_logger
from ratchet._payloads import Payloads
from ratchet._redact import redact
from ratchet._results import JobResult
from ratchet._types import Job, JobStatus
from ratchet.errors import PayloadDecryptionError, TargetNotAllowedError
from ratchet.events import BranchChosen
from ratchet.spi import JobStore, SupportsChains, SupportsWorkflows
from ratchet.spi._class_policy import ClassPolicy

__all__ = ["BRANCH_NOT_TAKEN_MESSAGE", "BranchResolver"]

log = get_logger("ratchet.worker")

BRANCH_NOT_TAKEN_MESSAGE = "Canceled: job {parent} ended and {why}."
"""The ``last_error`` of a branch that did not run (``why``: which branch ran instead, or
that none matched)."""


# What one resolution did.
_NO_BRANCHES = "no branches"  # none WAITING: nothing to decide
_RESOLVED = "resolved"  # this call released the winner and canceled the rest
_RACED = "raced"  # another resolution came first
_DEFERRED = "deferred"  # not now: the step is to run again, or cannot be evaluated here


class _CannotEvaluateHere(Exception):
    """A condition or a result this node cannot read; another node (or later) may."""


class BranchResolver:
    """Resolves the branches of ended jobs (see the module). Thread-safe."""

    def __init__(
        self,
        store: JobStore,
        payloads: Payloads,
        *,
        trusted: Mapping[str, Callable[..., Any]],
        policy: ClassPolicy,
        lifecycle: Lifecycle | None = None,
    ) -> None:
        self.store = store
        self.payloads = payloads
        self.trusted = trusted
        self.policy = policy
        self.lifecycle = lifecycle

    def after_success(self, job_id: str) -> None:
        """``job_id``, a step with branches, succeeded: resolve them."""
        self.resolve(job_id)

    def after_failure(self, job_id: str) -> None:
        """``job_id`` failed for good (dead-lettered): resolve its branches when it has
        any (a read of its dependents: failures are rare), else cancel the rest of its
        chain. Branches that cannot be evaluated here keep waiting (and so does the rest)."""
        if self._resolve_once(job_id) == _NO_BRANCHES:
            cancel_rest_of_chain(self.store, job_id, self.lifecycle)

    def resolve(self, parent_id: str) -> bool:
        """Resolve the WAITING branches of ``parent_id`` if it has ended; whether this call
        did (``False`` too when another node did first). Never raises: a failure is
        logged, and the orphan scan's :meth:`recover` tries again."""
        return self._resolve_once(parent_id) == _RESOLVED

    def _resolve_once(self, parent_id: str) -> str:
        store = self.store
        if not isinstance(store, SupportsWorkflows) or not isinstance(store, SupportsChains):
            return _NO_BRANCHES
        try:
            return self._resolve(store, store, parent_id)
        except _CannotEvaluateHere as exc:
            log.warning(
                "The branches after job %s wait: %s. A node that can evaluate them will.",
                parent_id,
                exc,
                extra={"event": "branches_deferred", "job_id": parent_id},
            )
        except Exception as exc:
            log.warning(
                "Could not resolve the branches after job %s yet (%s); the orphan scan will.",
                parent_id,
                redact(f"{type(exc).__name__}: {exc}"),
                extra={"event": "branches_deferred", "job_id": parent_id},
            )
        return _DEFERRED

    def recover(self, *, limit: int) -> int:
        """The orphan scan's part: resolve the branches of ended jobs a crash (or a node
        that could not evaluate them) left WAITING; how many parents it resolved."""
        store = self.store
        if not isinstance(store, SupportsWorkflows):
            return 0
        return sum(self.resolve(parent_id) for parent_id in store.branch_parents(limit=limit))

    # -- the decision ---------------------------------------------------------------------

    def _resolve(self, store: SupportsWorkflows, chains: SupportsChains, parent_id: str) -> str:
        branches = [
            job
            for job in chains.dependents(parent_id)
            if job.branch is not None and job.status is JobStatus.WAITING
        ]
        if not branches:
            return _NO_BRANCHES
        parent = read_job(self.store, parent_id)
        if parent is not None and parent.status not in (
            JobStatus.SUCCEEDED,
            JobStatus.FAILED,
            JobStatus.CANCELED,
        ):
            return _DEFERRED  # still to run (a retry is due): its end resolves them
        winner, why = self._choose(store, parent, branches)
        changed = store.resolve_branches(
            parent_id,
            winner=None if winner is None else winner.id,
            message=BRANCH_NOT_TAKEN_MESSAGE.format(parent=parent_id, why=why),
        )
        if not changed:
            return _RACED  # another node resolved them first
        losers = [b.id for b in branches if winner is None or b.id != winner.id]
        if self.lifecycle is not None:
            self._announce(parent, parent_id, winner, len(losers))
            self.lifecycle.canceled(self.store, losers)
        for loser in losers:  # the main line after a branch that lost goes with it
            cancel_rest_of_chain(self.store, loser, self.lifecycle)
        if winner is None:
            log.info(
                "Job %s ended; no branch after it runs (%d canceled).",
                parent_id,
                len(losers),
                extra={"event": "branches_resolved", "job_id": parent_id},
            )
        else:
            log.info(
                "Job %s ended; its branch %s (%s) runs, %d canceled.",
                parent_id,
                winner.id,
                _describe(winner),
                len(losers),
                extra={"event": "branches_resolved", "job_id": parent_id},
            )
        return _RESOLVED

    def _announce(
        self, parent: Job | None, parent_id: str, winner: Job | None, canceled: int
    ) -> None:
        lifecycle = self.lifecycle
        if lifecycle is None or not lifecycle.events.wants(BranchChosen):
            return
        lifecycle.events.emit(
            BranchChosen(
                node_id=lifecycle.node_id,
                at=lifecycle.clock.now(),
                job_id=parent_id,
                name=parent.name if parent is not None else parent_id,
                priority=parent.priority if parent is not None else 0,
                branch_id=None if winner is None else winner.id,
                condition=None if winner is None else _describe(winner),
                canceled=canceled,
            )
        )

    def _choose(
        self, store: SupportsWorkflows, parent: Job | None, branches: list[Job]
    ) -> tuple[Job | None, str]:
        """The branch to run (or ``None``) and why the others do not."""
        if parent is None or parent.status is JobStatus.CANCELED:
            return None, "was canceled" if parent is not None else "is gone"
        try:
            result = job_result(self.payloads.open_job_strictly(parent))
        except PayloadDecryptionError as exc:
            raise _CannotEvaluateHere(f"its result cannot be opened here ({exc})") from exc
        fallback = None
        for branch in sorted(branches, key=_order):
            condition = branch.branch
            assert condition is not None
            if condition.kind == "otherwise":
                fallback = fallback or branch
                continue
            try:
                matched = self._matches(branch, result)
            except _CannotEvaluateHere:
                raise
            except Exception as exc:
                reason = redact(summarize_failure(exc, limit=500))
                store.cancel_branch(
                    branch.id,
                    message=f"Canceled: its condition {_describe(branch)} raised {reason}",
                )
                if self.lifecycle is not None:
                    self.lifecycle.canceled(self.store, [branch.id])
                continue
            if matched:
                return branch, f"its branch {branch.id} ({_describe(branch)}) ran instead"
        if fallback is not None and result.succeeded:
            return fallback, f"no branch matched: the main line ({fallback.id}) ran"
        return None, "no branch after it matched"

    def _matches(self, branch: Job, result: JobResult) -> bool:
        condition = branch.branch
        assert condition is not None
        if condition.kind == "success":
            return result.succeeded
        if condition.kind == "failure":
            return not result.succeeded
        if condition.kind == "success_rate" and condition.threshold is not None:
            return _success_rate(result) >= condition.threshold
        if condition.kind == "when" and condition.predicate:
            predicate = self._predicate(branch.id, condition.predicate)
            answer = predicate(result)
            if inspect.isawaitable(answer):
                close = getattr(answer, "close", None)
                if close is not None:
                    close()  # never awaited: silence the warning
                raise TypeError("the condition is async; conditions must be plain functions")
            return bool(answer)
        raise ValueError(f"the stored condition {condition!r} is not one Ratchet knows")

    def _predicate(self, branch_id: str, path: str) -> Callable[..., Any]:
        trusted = self.trusted.get(path)
        if trusted is not None:
            return trusted
        try:
            func, _is_async = resolve_untrusted_target(branch_id, path, self.policy)
        except TargetNotAllowedError as exc:
            raise _CannotEvaluateHere(str(exc)) from exc
        return func


def _success_rate(result: JobResult) -> float:
    """The share of a batch's children that succeeded, from its record's counts."""
    counts = result.value if isinstance(result.value, dict) else {}
    ended = sum(int(counts.get(key, 0)) for key in ("succeeded", "failed", "canceled"))
    return 1.0 if ended == 0 else int(counts.get("succeeded", 0)) / ended


def _order(branch: Job) -> tuple[int, int, str]:
    condition = branch.branch
    assert condition is not None
    return condition.priority, condition.order, branch.id


def _describe(branch: Job) -> str:
    return "no condition" if branch.branch is None else branch.branch.describe()
