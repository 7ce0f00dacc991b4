"""Logging in and out: the session cookie, how tokens are kept, expiry, revocation, throttling."""

from __future__ import annotations

import asyncio
import base64
from datetime import UTC, datetime
from http.cookies import SimpleCookie

import httpx
import pytest

from palaver.auth.limiter import MemoryRateLimiter
from tests.support import (
    Guest,
    Server,
    Ws,
    age_session,
    revoked_login,
    sql,
    token_hash,
    unique,
)


def _address() -> str:
    """A client address of its own, so that failed logins of one test never throttle another."""
    tail = unique("")
    return f"10.{int(tail[:2], 16)}.{int(tail[2:4], 16)}.{int(tail[4:6], 16)}"


def _login(server: Server, password: str, **headers: str) -> httpx.Response:
    with server.client() as api:
        return api.post("/api/login", json={"password": password}, headers=headers)


def _session_cookie(response: httpx.Response) -> tuple[str, dict[str, str | bool]]:
    cookies = [v for k, v in response.headers.multi_items() if k == "set-cookie"]
    assert len(cookies) == 1, cookies
    parsed = SimpleCookie()
    parsed.load(cookies[0])
    morsel = parsed["session"]
    flags = {key: morsel[key] for key in ("httponly", "samesite", "path", "secure", "max-age")}
    return morsel.value, flags


def test_login_with_the_owner_key_answers_ok_and_sets_the_session_cookie(server: Server) -> None:
    response = _login(server, server.owner_key)
    assert response.status_code == 200
    assert response.json() == {"ok": True}
    token, flags = _session_cookie(response)
    assert token
    assert flags["httponly"] is True
    assert str(flags["samesite"]).lower() == "strict"
    assert flags["path"] == "/"
    assert not flags["secure"], "a plain-HTTP request must not get a Secure cookie"
    assert flags["max-age"] == str(30 * 86400)


def test_cookie_is_secure_when_a_trusted_proxy_says_the_request_came_over_https(
    server: Server,
) -> None:
    response = _login(server, server.owner_key, **{"X-Forwarded-Proto": "https"})
    assert response.status_code == 200
    assert _session_cookie(response)[1]["secure"] is True


def test_logout_over_https_clears_the_cookie_with_the_same_attributes(server: Server) -> None:
    with server.login() as api:
        response = api.post("/api/logout", headers={"X-Forwarded-Proto": "https"})
    token, flags = _session_cookie(response)
    assert token == ""
    assert flags["max-age"] == "0" and flags["secure"] is True and flags["httponly"] is True


def test_forwarded_proto_is_ignored_unless_the_proxy_is_trusted(plain_server: Server) -> None:
    response = _login(plain_server, plain_server.owner_key, **{"X-Forwarded-Proto": "https"})
    assert response.status_code == 200
    assert not _session_cookie(response)[1]["secure"]


def test_me_answers_the_caller_who_is_a_user_with_the_owner_role(server: Server) -> None:
    with server.login() as owner:
        user = owner.ok("GET", "/api/me")["user"]
    assert user["role"] == "owner"
    assert user["id"].startswith("user_")


def test_wrong_password_answers_401_with_an_error(server: Server) -> None:
    response = _login(server, "not-the-key", **{"X-Forwarded-For": _address()})
    assert response.status_code == 401
    assert set(response.json()) - {"field"} == {"error"}
    assert "set-cookie" not in response.headers


@pytest.mark.parametrize("body", [{}, {"password": ""}, {"password": 5}, {"password": "x", "a": 1}])
def test_login_without_a_usable_password_answers_400(server: Server, body: object) -> None:
    with server.client() as api:
        response = api.post("/api/login", json=body, headers={"X-Forwarded-For": _address()})
    assert response.status_code == 400
    assert set(response.json()) - {"field"} == {"error"}


def test_session_tokens_are_random_and_carry_at_least_256_bits(server: Server) -> None:
    tokens = {_session_cookie(_login(server, server.owner_key))[0] for _ in range(5)}
    assert len(tokens) == 5
    for token in tokens:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        assert len(raw) >= 32


def test_session_tokens_are_stored_only_as_hashes(server: Server) -> None:
    with server.login() as api:
        token = api.token
        api.ok("GET", "/api/me")
    stored = sql(server, "SELECT token_hash FROM sessions")
    assert (token_hash(token),) in stored
    for path in server.data_dir.glob("palaver.db*"):
        assert token.encode() not in path.read_bytes(), f"the raw token is in {path.name}"


def test_logout_revokes_the_session_on_the_server(server: Server) -> None:
    with server.login() as api:
        token = api.token
        response = api.post("/api/logout")
        assert response.status_code == 200
        assert response.json() == {"ok": True}
        cleared = [v for k, v in response.headers.multi_items() if k == "set-cookie"]
        assert cleared and "max-age=0" in cleared[0].lower()
    with server.client(cookies={"session": token}) as stale:
        response = stale.get("/api/me")
    assert response.status_code == 401
    assert set(response.json()) - {"field"} == {"error"}
    assert sql(server, "SELECT 1 FROM sessions WHERE token_hash = ?", token_hash(token)) == []


def test_logout_closes_that_sessions_sockets_with_4401_and_no_other(server: Server) -> None:
    with (
        server.login() as leaving,
        server.login() as staying,
        Ws(server, leaving.token) as doomed,
        Ws(server, staying.token) as other,
    ):
        leaving.ok("POST", "/api/logout")
        assert doomed.expect_close() == 4401
        other.send({"type": "ping"})
        other.expect("pong")


def test_a_revoked_cookie_cannot_log_out_again(server: Server) -> None:
    with revoked_login(server) as api:
        assert api.post("/api/logout").status_code == 401


def test_sessions_expire_after_30_idle_days(server: Server) -> None:
    with server.login() as fresh, server.login() as idle:
        age_session(server, fresh.token, days=29)
        age_session(server, idle.token, days=31)
        assert fresh.get("/api/me").status_code == 200
        response = idle.get("/api/me")
        assert response.status_code == 401
        assert set(response.json()) - {"field"} == {"error"}


def test_using_a_session_restarts_its_idle_clock(server: Server) -> None:
    with server.login() as api:
        age_session(server, api.token, days=29)
        api.ok("GET", "/api/me")
        rows = sql(
            server, "SELECT last_used_at FROM sessions WHERE token_hash = ?", token_hash(api.token)
        )
        assert rows[0][0][:10] == datetime.now(UTC).date().isoformat()


def test_session_idle_days_setting_is_honoured(server: Server, owner: httpx.Client) -> None:
    owner.put("/api/settings", json={"sessionIdleDays": 2}).raise_for_status()
    try:
        with server.login() as api:
            assert _session_cookie(_login(server, server.owner_key))[1]["max-age"] == str(2 * 86400)
            age_session(server, api.token, days=3)
            assert api.get("/api/me").status_code == 401
    finally:
        owner.put("/api/settings", json={"sessionIdleDays": 30}).raise_for_status()


def test_a_new_owner_key_logs_out_owner_sessions_of_the_old_one_but_not_guests(
    fresh_server: Server,
) -> None:
    fresh_server.start()
    with fresh_server.login() as owner:
        guest = Guest(fresh_server, owner)
        tokens = {"owner": owner.token, "guest": guest.api.token}
    guest.close()
    old_key = fresh_server.owner_key
    fresh_server.stop()

    fresh_server.owner_key = "a-brand-new-owner-key"
    fresh_server.start()  # on another port: clients are made anew with the old cookies
    for who, status in (("owner", 401), ("guest", 200)):
        with fresh_server.client(cookies={"session": tokens[who]}) as api:
            assert api.get("/api/me").status_code == status, who
    assert _login(fresh_server, old_key).status_code == 401
    assert _login(fresh_server, "a-brand-new-owner-key").status_code == 200


def test_more_than_10_failed_logins_from_one_address_are_throttled(server: Server) -> None:
    here, elsewhere = _address(), _address()
    for _ in range(10):
        assert _login(server, "wrong", **{"X-Forwarded-For": here}).status_code == 401
    for password in ("wrong", server.owner_key):
        response = _login(server, password, **{"X-Forwarded-For": here})
        assert response.status_code == 429
        assert set(response.json()) - {"field"} == {"error"}
        assert 1 <= int(response.headers["Retry-After"]) <= 300
    assert _login(server, "wrong", **{"X-Forwarded-For": elsewhere}).status_code == 401
    assert _login(server, server.owner_key, **{"X-Forwarded-For": elsewhere}).status_code == 200


def test_the_throttle_counts_the_address_the_trusted_proxy_saw(server: Server) -> None:
    """A client can put anything in X-Forwarded-For; only the entry the proxy added counts."""
    here = _address()
    for _ in range(10):
        spoofed = f"{_address()}, {here}"
        assert _login(server, "wrong", **{"X-Forwarded-For": spoofed}).status_code == 401
    assert _login(server, "wrong", **{"X-Forwarded-For": here}).status_code == 429


async def test_failed_logins_are_forgotten_once_the_window_has_passed() -> None:
    now = [1000.0]
    limiter = MemoryRateLimiter(clock=lambda: now[0])
    for _ in range(10):
        assert await limiter.reserve_attempt("login:a", 300, 10) == 0
        now[0] += 1
    assert await limiter.reserve_attempt("login:a", 300, 10) == 290.0
    now[0] = 1305.0
    assert await limiter.reserve_attempt("login:a", 300, 10) == 0, "six have left the window"
    now[0] = 1400.0
    for _ in range(9):
        assert await limiter.reserve_attempt("login:a", 300, 10) == 0


async def test_a_released_attempt_does_not_count() -> None:
    limiter = MemoryRateLimiter(clock=lambda: 1000.0)
    for _ in range(20):
        assert await limiter.reserve_attempt("login:b", 300, 10) == 0
        await limiter.release_attempt("login:b")
    assert await limiter.reserve_attempt("login:b", 300, 10) == 0


async def test_300_simultaneous_wrong_passwords_get_at_most_10_evaluated(server: Server) -> None:
    here = _address()
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as client:
        answers = await asyncio.gather(
            *(
                client.post(
                    "/api/login", json={"password": f"wrong-{n}"}, headers={"X-Forwarded-For": here}
                )
                for n in range(300)
            )
        )
    statuses = [a.status_code for a in answers]
    assert set(statuses) <= {401, 429}
    assert statuses.count(401) <= 10, statuses.count(401)
    assert statuses.count(429) >= 290


def test_a_right_password_does_not_count_as_a_failed_attempt(server: Server) -> None:
    here = _address()
    for _ in range(15):
        assert _login(server, server.owner_key, **{"X-Forwarded-For": here}).status_code == 200
    assert _login(server, "wrong", **{"X-Forwarded-For": here}).status_code == 401


def test_a_renewed_cookie_comes_with_every_kind_of_answer(server: Server) -> None:
    """JSON FastAPI encodes, JSON a route encoded itself, a file and a stream: a session due
    for renewal gets its cookie with each."""
    with server.login() as api:
        room = api.ok("POST", "/api/channels", json={"name": unique("renew-"), "type": "group"})
        files = {"file": ("note.txt", b"kept", "text/plain")}
        upload = api.ok("POST", "/api/upload", files=files)["url"]
        for path in (
            "/api/me",
            "/api/channels",
            upload,
            f"/api/channels/{room['channel']['id']}/export?format=markdown",
        ):
            age_session(server, api.token, days=29)
            answer = api.get(path)
            assert answer.status_code == 200, (path, answer.text)
            assert api.token in answer.headers.get("set-cookie", ""), path


def test_an_active_session_gets_its_cookie_renewed_when_its_last_use_is(server: Server) -> None:
    with server.login() as api:
        fresh = api.get("/api/me")
        assert "set-cookie" not in fresh.headers, "a session used a moment ago is not renewed"
        age_session(server, api.token, days=29)
        renewed = api.get("/api/me")
        assert renewed.status_code == 200
        token, flags = _session_cookie(renewed)
        assert token == api.token
        assert flags["max-age"] == str(30 * 86400)
        assert flags["httponly"] is True and str(flags["samesite"]).lower() == "strict"
        age_session(server, api.token, days=29)
        assert api.get("/api/me").status_code == 200, "day 58 of an active session"
