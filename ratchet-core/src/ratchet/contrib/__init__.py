"""Framework integrations, one module per framework, each imported only when used:

- :mod:`ratchet.contrib.starlette`: a lifespan for Starlette and FastAPI that runs an
  embedded worker (extra ``ratchet-core[starlette]``);
- :mod:`ratchet.contrib.flask`: a Flask extension, configured from ``app.config``, that
  runs every job inside the application context (extra ``ratchet-core[flask]``).

Async enqueue needs no integration: ``await app.enqueue_async(job, …)``
(:meth:`ratchet.Ratchet.enqueue_async`) and, inside your transaction,
``await app.enqueue_in_async(session, job, …)``.
"""
