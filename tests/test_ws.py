"""The WebSocket channel: authentication, the client protocol, delivery, and its defences."""

from __future__ import annotations

import json
import secrets
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.support import (
    Api,
    Guest,
    Server,
    Ws,
    expired_login,
    new_channel,
    post,
    revoked_login,
    wait_until,
)


@pytest.fixture(scope="module")
def owner_id(owner: Api) -> str:
    return str(owner.ok("GET", "/api/me")["user"]["id"])


@pytest.fixture
def channel(owner: Api) -> str:
    return str(new_channel(owner)["id"])


def _refused(ws: Ws) -> None:
    """The server answers `unauthenticated` and closes with 4401."""
    event = ws.expect("error")
    assert event["data"]["code"] == "unauthenticated"
    assert isinstance(event["data"]["message"], str) and event["data"]["message"]
    assert ws.expect_close() == 4401


# -- authentication ---------------------------------------------------------------------------


def test_auth_by_message_answers_auth_ok_with_the_user_id(
    server: Server, owner: Api, owner_id: str
) -> None:
    with Ws(server) as ws:
        ws.send({"type": "auth", "token": owner.token})
        assert ws.recv() == {"type": "auth_ok", "userId": owner_id}


def test_auth_by_the_session_cookie_answers_auth_ok_right_after_connecting(
    server: Server, owner: Api, owner_id: str
) -> None:
    with Ws(server, additional_headers={"Cookie": f"session={owner.token}"}) as ws:
        assert ws.recv() == {"type": "auth_ok", "userId": owner_id}
        ws.send({"type": "ping"})
        ws.expect("pong")


@pytest.mark.parametrize(
    "first",
    [
        {"type": "ping"},
        {"type": "subscribe", "channelId": "ch_x"},
        {"type": "auth"},
        {"type": "auth", "token": 42},
        {"type": "auth", "token": "not-a-token"},
        ["auth"],
        "not json at all",
    ],
    ids=["ping", "subscribe", "no-token", "token-not-string", "unknown-token", "list", "not-json"],
)
def test_anything_but_a_valid_auth_first_is_refused_with_4401(server: Server, first: Any) -> None:
    with Ws(server) as ws:
        ws.conn.send(first if isinstance(first, str) else json.dumps(first))
        _refused(ws)


def test_a_binary_first_frame_is_refused_with_4401(server: Server) -> None:
    with Ws(server) as ws:
        ws.conn.send(b'{"type": "auth"}')
        _refused(ws)


@pytest.mark.parametrize("how", ["expired", "revoked"])
def test_an_expired_or_revoked_token_is_refused_with_4401(server: Server, how: str) -> None:
    with expired_login(server) if how == "expired" else revoked_login(server) as api:
        token = api.cookies["session"]
    with Ws(server) as ws:
        ws.send({"type": "auth", "token": token})
        _refused(ws)
    with Ws(server, additional_headers={"Cookie": f"session={token}"}) as ws:
        _refused(ws)


def test_a_revoked_session_closes_its_sockets_with_4401(server: Server) -> None:
    with server.login() as api, Ws(server, api.token) as ws:
        api.ok("POST", "/api/logout")
        assert ws.expect_close() == 4401


# -- the protocol after auth --------------------------------------------------------------------


def test_ping_answers_pong(server: Server, owner: Api) -> None:
    with Ws(server, owner.token) as ws:
        ws.send({"type": "ping"})
        assert ws.recv() == {"type": "pong"}


@pytest.mark.parametrize(
    "raw",
    ["{not json", '"a string"', "[1, 2]", '{"type": "dance"}', '{"no": "type"}', b"\x00\x01"],
    ids=["malformed", "string", "list", "unknown-type", "no-type", "binary"],
)
def test_bad_input_after_auth_answers_bad_request_and_keeps_the_connection(
    server: Server, owner: Api, raw: str | bytes
) -> None:
    with Ws(server, owner.token) as ws:
        ws.conn.send(raw)
        event = ws.expect("error")
        assert event["data"]["code"] == "bad_request"
        assert event["data"]["message"]
        ws.send({"type": "ping"})
        ws.expect("pong")


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ('{"type": "ping", "x": NaN}', "NaN is not a JSON number"),
        ('{"type": "subscribe", "channelId": "c", "n": -Infinity}', "-Infinity"),
        ("[" * 1000 + "]" * 1000, "levels deep"),
        ('{"type": "ping", "x": ' + '{"a": ' * 5000 + "1" + "}" * 5001, "levels deep"),
    ],
    ids=["nan", "infinity", "nested-1000", "nested-5000-in-object"],
)
def test_frames_that_are_not_standard_json_answer_bad_request_and_keep_the_connection(
    server: Server, owner: Api, raw: str, says: str
) -> None:
    with Ws(server, owner.token) as ws:
        ws.conn.send(raw)
        event = ws.expect("error")
        assert event["data"]["code"] == "bad_request"
        assert says in event["data"]["message"]
        ws.send({"type": "ping"})
        ws.expect("pong")


def test_a_frame_over_64_kib_closes_the_socket_with_1009(server: Server, owner: Api) -> None:
    """What a client sends is a few hundred bytes; a huge frame would hold the loop."""
    with Ws(server, owner.token) as ws:
        ws.conn.send('{"type": "ping", "pad": "' + "a" * 70_000 + '"}')
        assert ws.expect_close() == 1009


def test_a_deeply_nested_first_frame_is_refused_with_4401(server: Server) -> None:
    with Ws(server) as ws:
        ws.conn.send("[" * 1000 + "]" * 1000)
        assert ws.expect_close() == 4401


def test_subscribe_acknowledges_and_delivers_the_channels_messages(
    server: Server, owner: Api, channel: str
) -> None:
    with Ws(server, owner.token) as ws:
        ws.send({"type": "subscribe", "channelId": channel})
        assert ws.recv() == {"type": "subscribed", "data": {"channelId": channel}}
        message_id = post(owner, channel, "over the wire")
        event = ws.expect("message")
        assert set(event) == {"type", "data"}
        data = event["data"]
        assert (data["id"], data["channelId"], data["content"]) == (
            message_id,
            channel,
            "over the wire",
        )
        assert {"agentId", "type", "createdAt"} <= set(data)


@pytest.mark.parametrize("channel_id", ["ch_nope", 17, None])
def test_subscribing_to_an_unknown_or_malformed_channel_is_an_error(
    server: Server, owner: Api, channel_id: Any
) -> None:
    with Ws(server, owner.token) as ws:
        ws.send({"type": "subscribe", "channelId": channel_id})
        code = ws.expect("error")["data"]["code"]
        assert code == ("not_found" if isinstance(channel_id, str) else "bad_request")
        ws.send({"type": "ping"})
        ws.expect("pong")


def test_a_guest_cannot_subscribe_to_a_channel_it_is_not_in(
    server: Server, owner: Api, channel: str
) -> None:
    with Guest(server, owner) as guest, Ws(server, guest.api.token) as ws:
        ws.send({"type": "subscribe", "channelId": channel})
        assert ws.expect("error")["data"]["code"] == "not_found"
        with Ws(server, owner.token) as other:
            other.send({"type": "subscribe", "channelId": "ch_never"})
            unknown = other.expect("error")["data"]["message"]
        assert ws.seen[-1]["data"]["message"] == unknown.replace("ch_never", channel)


def test_unsubscribe_stops_delivery(server: Server, owner: Api) -> None:
    left, kept = new_channel(owner)["id"], new_channel(owner)["id"]
    with Ws(server, owner.token) as ws:
        ws.subscribe(left)
        ws.subscribe(kept)
        ws.send({"type": "unsubscribe", "channelId": left})
        assert ws.expect("unsubscribed") == {"type": "unsubscribed", "data": {"channelId": left}}
        post(owner, left, "nobody listens")
        still = post(owner, kept, "still delivered")
        assert ws.expect("message")["data"]["id"] == still


def test_every_subscriber_gets_each_message_once(server: Server, owner: Api, channel: str) -> None:
    with Ws(server, owner.token) as one, Ws(server, owner.token) as two:
        for ws in (one, two):
            ws.subscribe(channel)
            ws.subscribe(channel)
        ids = [post(owner, channel, f"m{i}") for i in range(5)]
        for ws in (one, two):
            got = [ws.expect("message")["data"]["id"] for _ in ids]
            assert got == ids
            ws.send({"type": "ping"})
            ws.expect("pong")
            assert [e["type"] for e in ws.seen].count("message") == len(ids)


# -- origin check ---------------------------------------------------------------------------------


def test_a_foreign_origin_is_refused(server: Server) -> None:
    with pytest.raises(InvalidStatus) as refused:
        Ws(server, origin="https://evil.example")
    assert refused.value.response.status_code == 403


def test_the_services_own_origin_is_accepted(server: Server, owner: Api) -> None:
    with Ws(server, owner.token, origin=f"http://127.0.0.1:{server.port}") as ws:
        ws.send({"type": "ping"})
        ws.expect("pong")


# -- a server with a short idle limit and an allowed origin ------------------------------------


@pytest.fixture(scope="module")
def idle_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("idle") / "srv")
    srv.start(
        PALAVER_WS_IDLE_SECONDS="1",
        PALAVER_WS_AUTH_SECONDS="3",
        PALAVER_WS_UNAUTHENTICATED_PER_ADDRESS="5",
        PALAVER_ALLOWED_ORIGINS='["https://chat.example.com"]',
    )
    yield srv
    srv.stop()


def test_listed_origins_are_accepted(idle_server: Server) -> None:
    with idle_server.login() as api:
        with Ws(idle_server, api.token, origin="https://chat.example.com") as ws:
            ws.send({"type": "ping"})
            ws.expect("pong")
        with pytest.raises(InvalidStatus):
            Ws(idle_server, origin="https://chat.example.com.evil.example")


def test_a_silent_connection_is_closed_but_one_that_pings_stays(idle_server: Server) -> None:
    with (
        idle_server.login() as api,
        Ws(idle_server, api.token) as silent,
        Ws(idle_server, api.token) as chatty,
    ):
        started = time.monotonic()
        while time.monotonic() - started < 2.5:
            chatty.send({"type": "ping"})
            chatty.expect("pong")
            time.sleep(0.3)
        assert silent.expect_close(timeout=5) == 4408
        chatty.send({"type": "ping"})
        chatty.expect("pong")


def test_a_connection_that_never_authenticates_is_closed_with_4401(idle_server: Server) -> None:
    with Ws(idle_server) as ws:
        started = time.monotonic()
        assert ws.expect_close(timeout=10) == 4401
        assert time.monotonic() - started < 6


def test_the_auth_deadline_is_10_seconds_by_default(server: Server) -> None:
    with Ws(server) as ws:
        started = time.monotonic()
        assert ws.expect_close(timeout=20) == 4401
        assert 9 <= time.monotonic() - started < 15


def test_unauthenticated_sockets_per_address_are_capped(idle_server: Server) -> None:
    waiting = [Ws(idle_server) for _ in range(5)]
    try:
        with pytest.raises(InvalidStatus) as refused:
            Ws(idle_server)
        assert refused.value.response.status_code == 429
        with idle_server.login() as api:
            cookie = {"Cookie": f"session={api.token}"}
            with Ws(idle_server, additional_headers=cookie) as logged_in:
                logged_in.expect("auth_ok")
    finally:
        for ws in waiting:
            ws.close()
    wait_until(lambda: _opens(idle_server), what="a slot to free up")
    with idle_server.login() as api, Ws(idle_server, api.token) as ws:
        ws.send({"type": "ping"})
        ws.expect("pong")


def _opens(server: Server) -> bool:
    try:
        Ws(server).close()
    except InvalidStatus:
        return False
    return True


# -- a slow consumer ------------------------------------------------------------------------------


QUEUE_SIZE = 4
BIG = 576 * 1024
"""Random bytes per message (sent as 768 KiB of text): compression must not shrink them."""


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("slow") / "srv")
    # The grace outlasts the 5 s the server waits to deliver a close frame.
    srv.start(PALAVER_WS_QUEUE_SIZE=str(QUEUE_SIZE), PALAVER_SHUTDOWN_GRACE_SECONDS="6")
    with srv.login() as owner:
        limits = {"maxMessageChars": 1_000_000, "messagesPerMinute": 100_000}
        owner.ok("PUT", "/api/settings", json={"limits": {**limits, "messageBurst": 100_000}})
    yield srv
    srv.stop()


def _stalled_client(server: Server, token: str) -> Ws:
    """A client that stops reading: a tiny receive buffer, and no read-ahead in the library."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    return Ws(server, token, sock=sock, max_queue=1, close_timeout=1)


def test_a_slow_consumer_is_disconnected_with_1013_and_others_keep_receiving(
    slow_server: Server,
) -> None:
    with slow_server.login() as owner:
        channel = new_channel(owner)["id"]
        with (
            Ws(slow_server, owner.token) as fast,
            _stalled_client(slow_server, owner.token) as slow,
        ):
            fast.subscribe(channel)
            slow.subscribe(channel)
            posted: list[str] = []
            for i in range(200):
                posted.append(post(owner, channel, f"{i:04d} {secrets.token_urlsafe(BIG)}"))
                assert fast.expect("message")["data"]["id"] == posted[-1]
                if "does not keep up" in slow_server.read_log():
                    break
            else:
                pytest.fail("the stalled client was never disconnected")

            # Reading again, it gets what was already on its way, then the close frame.
            received = 0
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    received += slow.recv(timeout=10)["type"] == "message"
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
            assert received < len(posted), "it missed what came after it fell behind"

            later = [post(owner, channel, "after the slow one left") for _ in range(3)]
            assert [fast.expect("message")["data"]["id"] for _ in later] == later


def test_a_client_that_never_reads_again_cannot_hold_up_a_shutdown(slow_server: Server) -> None:
    """Its close frame cannot get through, so the server gives up on it and stops on time (this
    test stops the module's server: it comes last)."""
    with slow_server.login() as owner:
        channel = new_channel(owner)["id"]
        kills = slow_server.read_log().count("does not keep up")
        with _stalled_client(slow_server, owner.token) as slow:
            slow.subscribe(channel)
            for _ in range(200):
                post(owner, channel, secrets.token_urlsafe(BIG))
                if slow_server.read_log().count("does not keep up") > kills:
                    break
            else:
                pytest.fail("the stalled client was never disconnected")
            started = time.monotonic()
            slow_server.stop()
            assert time.monotonic() - started < 15
            assert "timeout graceful shutdown exceeded" in slow_server.read_log()
