"""A Flask app whose route enqueues a job; the job runs inside the app context.

Run it from this folder with ``uv run python app.py`` (the dev server plus an embedded
worker), or serve ``app`` with any WSGI server and run ``uv run flask --app app ratchet
worker`` beside it; see README.md. The store is ``app.config["RATCHET_STORE_URL"]``:
``RATCHET_STORE_URL`` from the environment, by default ``sqlite:///ratchet.db`` here.
"""

from __future__ import annotations

import os
from typing import Any

from flask import Flask, abort, current_app, request

from ratchet.contrib.flask import RatchetFlask

app = Flask(__name__)
app.config["WELCOME_SENDER"] = "hello@example.com"
app.config["RATCHET_STORE_URL"] = os.environ.get("RATCHET_STORE_URL", "sqlite:///ratchet.db")
jobs = RatchetFlask(app)  # every RATCHET_* key of app.config is a Ratchet option


@jobs.ratchet.job(name="send_welcome_email", max_retries=3)
def send_welcome_email(address: str) -> str:
    # A worker runs this inside app.app_context(): current_app and its config work.
    sender = current_app.config["WELCOME_SENDER"]
    current_app.logger.info("Sending a welcome mail from %s to %s", sender, address)
    return f"Welcome mail from {sender} sent to {address}"


@app.post("/signups")
def sign_up() -> tuple[dict[str, str], int]:
    address = (request.get_json(silent=True) or {}).get("address")
    if not isinstance(address, str):
        abort(400, description='Send JSON like {"address": "ada@example.com"}.')
    return {"job_id": send_welcome_email.enqueue(address)}, 202


@app.get("/jobs/<job_id>")
def job_status(job_id: str) -> dict[str, Any]:
    job = jobs.ratchet.get_job(job_id)
    if job is None:
        abort(404, description=f"No job {job_id!r}.")
    return {"id": job.id, "status": job.status.value, "result": job.result}


if __name__ == "__main__":
    # One command for trying it: the development server with an embedded worker, which
    # drains (running jobs finish or go back to the queue) when the server stops.
    with jobs.ratchet.worker():
        app.run(port=int(os.environ.get("PORT", "5000")))
