"""A FastAPI app whose route enqueues a job that an embedded Ratchet worker runs.

Run it from this folder with ``uv run uvicorn app:api`` (see README.md). The store is
``RATCHET_STORE_URL``, by default ``sqlite:///ratchet.db`` in the working directory.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

from ratchet import Ratchet
from ratchet.contrib.starlette import ratchet_lifespan
from ratchet.metrics import RatchetMetrics

ratchet = Ratchet.from_env()  # RATCHET_* variables; SQLite in this folder by default
metrics = RatchetMetrics(ratchet)


@ratchet.job(name="send_welcome_email", max_retries=3)
async def send_welcome_email(address: str) -> str:
    await asyncio.sleep(0.01)  # a real app would call its mail provider here
    return f"Welcome mail sent to {address}"


# The worker starts with the app and drains at shutdown; /ops/healthz judges it.
api = FastAPI(lifespan=ratchet_lifespan(ratchet, on_start=metrics.watch))
api.mount("/ops", metrics.asgi_app())  # /ops/metrics, /ops/healthz, /ops/readyz


class Signup(BaseModel):
    address: str


@api.post("/signups", status_code=202)
async def sign_up(signup: Signup) -> dict[str, str]:
    # Built and checked here; only the store write runs in a thread, off the event loop.
    job_id = await ratchet.enqueue_async(send_welcome_email, signup.address)
    return {"job_id": job_id}


@api.get("/jobs/{job_id}")
async def job_status(job_id: str) -> dict[str, Any]:
    job = await asyncio.to_thread(ratchet.get_job, job_id)
    if job is None:
        raise HTTPException(status_code=404, detail=f"No job {job_id!r}.")
    return {"id": job.id, "status": job.status.value, "result": job.result}
