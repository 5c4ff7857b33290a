"""Who may look, who may act, and what the browser must refuse.

* **Authentication** (:class:`AuthMiddleware`): none, HTTP Basic against one user and
  password, or a callable that names the user of a request (``None`` refuses it). Every
  path is behind it, the static files too: the dashboard says nothing to a stranger.
* **CSRF**: every action is a POST whose form carries the token of the session's cookie
  (:data:`CSRF_COOKIE`, random, ``HttpOnly``, ``SameSite=Strict``), compared in constant
  time. A page another site serves can make the browser POST, with the cookie, but it
  cannot read the cookie to copy it into the form.
* **Headers** (:class:`SecurityHeadersMiddleware`): no framing (``X-Frame-Options`` and
  CSP ``frame-ancestors 'none'``), no MIME sniffing, scripts and styles from this origin
  only (so nothing a job wrote into its error text can run, even if escaping failed).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "ACTOR_KEY",
    "CSRF_COOKIE",
    "CSRF_FIELD",
    "Auth",
    "AuthMiddleware",
    "SecurityHeadersMiddleware",
    "check_auth",
    "check_csrf",
    "csrf_token",
    "set_csrf_cookie",
]

Auth = tuple[str, str] | Callable[[Request], str | Awaitable[str | None] | None] | None
"""What ``create_app(auth=...)`` takes: nothing (anyone, the actor is ``"anonymous"``), a
``(user, password)`` pair for HTTP Basic, or a callable given the request that returns
the user's name, or ``None`` to refuse (it may be ``async``)."""

ACTOR_KEY = "ratchet_dashboard.actor"
"""Where the authenticated user's name is kept in the ASGI scope (``scope["state"]``)."""

CSRF_COOKIE = "ratchet_dashboard_csrf"
CSRF_FIELD = "csrf_token"
ANONYMOUS = "anonymous"

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def check_auth(auth: Auth) -> Auth:
    """``auth`` itself when it is one of the accepted forms; else a TypeError or
    ValueError that says which forms there are."""
    if isinstance(auth, tuple) and (
        len(auth) != 2 or not all(isinstance(part, str) and part for part in auth)
    ):
        raise ValueError(
            "auth must be (user, password) with both non-empty strings, a callable "
            "taking the request and returning the user's name (or None to refuse), "
            "or None for no authentication; got a tuple without two non-empty strings."
        )
    if auth is not None and not isinstance(auth, tuple) and not callable(auth):
        raise TypeError(
            f"auth must be None, (user, password) or a callable, got {type(auth).__name__}."
        )
    return auth


class AuthMiddleware:
    """Refuses (401, with a Basic challenge) any request ``auth`` does not accept, and
    records the user's name for the audit events."""

    def __init__(self, app: ASGIApp, auth: Auth) -> None:
        self.app = app
        self.auth = check_auth(auth)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        actor = await self._actor(Request(scope))
        if actor is None:
            refusal = PlainTextResponse(
                "Authentication required.",
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="Ratchet dashboard", charset="UTF-8"'},
            )
            await refusal(scope, receive, send)
            return
        scope.setdefault("state", {})[ACTOR_KEY] = actor
        await self.app(scope, receive, send)

    async def _actor(self, request: Request) -> str | None:
        if self.auth is None:
            return ANONYMOUS
        if isinstance(self.auth, tuple):
            return _basic_user(request, *self.auth)
        answer: Any = self.auth(request)
        if isinstance(answer, Awaitable):
            answer = await answer
        return None if answer is None else str(answer)


def _basic_user(request: Request, user: str, password: str) -> str | None:
    """``user`` when the request's Basic credentials are ``user:password``, else None.
    Both parts are compared in constant time, and both always, so the answer's timing
    says nothing about which part was wrong."""
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        given = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    given_user, _, given_password = given.partition(":")
    user_ok = hmac.compare_digest(given_user.encode(), user.encode())
    password_ok = hmac.compare_digest(given_password.encode(), password.encode())
    return user if user_ok and password_ok else None


class SecurityHeadersMiddleware:
    """Adds the headers that keep the pages out of frames and the browser strict."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Frame-Options", "DENY")
                headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("Referrer-Policy", "same-origin")
                headers.setdefault("Cache-Control", "no-store")
            await send(message)

        await self.app(scope, receive, send_with_headers)


def csrf_token(request: Request) -> str:
    """The session's CSRF token: its cookie's, or a new one (set it with
    :func:`set_csrf_cookie` on the response)."""
    existing = request.cookies.get(CSRF_COOKIE, "")
    return existing if len(existing) >= 32 else secrets.token_urlsafe(32)


def set_csrf_cookie(request: Request, response: Response, token: str) -> None:
    """Give the browser the token, once, scoped to the dashboard's mount path."""
    if request.cookies.get(CSRF_COOKIE) == token:
        return
    response.set_cookie(
        CSRF_COOKIE,
        token,
        path=(request.scope.get("root_path") or "") + "/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def check_csrf(request: Request, submitted: object) -> bool:
    """Whether the form's token is the cookie's (constant-time; both must be present)."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not cookie or not isinstance(submitted, str) or not submitted:
        return False
    return hmac.compare_digest(cookie.encode(), submitted.encode())
