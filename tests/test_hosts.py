"""The Host header check against DNS rebinding, on HTTP and on the WebSocket upgrade."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import httpx
import pytest

from palaver.auth.hosts import AllowedHosts, host_name
from tests.support import Server

UPGRADE = (
    "GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
)


def _raw(server: Server, request: str) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request.encode())
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            part = sock.recv(4096)
            if not part:
                break
            answer += part
            if answer.startswith(b"HTTP/1.1 101"):
                break
        return answer


def _get(server: Server, host: str) -> httpx.Response:
    return httpx.get(f"{server.base_url}/api/me", headers={"Host": host}, timeout=10)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example"])
def test_a_request_by_a_name_that_is_not_allowed_answers_400(server: Server, host: str) -> None:
    answer = _get(server, host)
    assert answer.status_code == 400
    assert answer.json() == {
        "error": "This server does not answer to that host name (Host header)."
    }


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:80", "127.0.0.1", "[::1]:8000"])
def test_loopback_names_are_allowed(server: Server, host: str) -> None:
    assert _get(server, host).status_code == 401, "past the check, to the session check"


def test_the_websocket_upgrade_by_a_name_that_is_not_allowed_answers_400(server: Server) -> None:
    answer = _raw(server, UPGRADE.format(host="rebound.example", extra=""))
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b'"error"' in answer


def test_a_rebinding_page_cannot_open_the_socket_even_when_origin_and_host_agree(
    server: Server,
) -> None:
    extra = "Origin: http://rebound.example\r\n"
    answer = _raw(server, UPGRADE.format(host="rebound.example", extra=extra))
    assert answer.startswith(b"HTTP/1.1 400"), answer


def test_the_origin_is_checked_against_the_allowed_hosts_and_the_port(server: Server) -> None:
    host = f"127.0.0.1:{server.port}"
    for origin, status in [
        ("http://evil.example", b"403"),
        (f"http://evil.example:{server.port}", b"403"),
        ("http://localhost:3000", b"403"),
        ("http://localhost", b"403"),
        (f"https://localhost:{server.port}0", b"403"),
        (f"http://localhost:{server.port}", b"101"),
        (f"http://[::1]:{server.port}", b"101"),
    ]:
        answer = _raw(server, UPGRADE.format(host=host, extra=f"Origin: {origin}\r\n"))
        assert answer.startswith(b"HTTP/1.1 " + status), (origin, answer)


@pytest.fixture(scope="module")
def named_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("named") / "srv")
    srv.start(PALAVER_ALLOWED_HOSTS="chat.example.com, ops.example.com")
    yield srv
    srv.stop()


def test_allowed_hosts_add_names_to_the_loopback_ones(named_server: Server) -> None:
    assert _get(named_server, "chat.example.com").status_code == 401
    assert _get(named_server, "ops.example.com:443").status_code == 401
    assert _get(named_server, "127.0.0.1").status_code == 401
    assert _get(named_server, "other.example.com").status_code == 400
    behind_proxy = "Origin: https://chat.example.com\r\nX-Forwarded-Proto: https\r\n"
    answer = _raw(named_server, UPGRADE.format(host="chat.example.com", extra=behind_proxy))
    assert answer.startswith(b"HTTP/1.1 101"), answer
    other_port = "Origin: https://chat.example.com:8443\r\n"
    answer = _raw(named_server, UPGRADE.format(host="chat.example.com", extra=other_port))
    assert answer.startswith(b"HTTP/1.1 403"), answer


def test_a_star_allows_any_host_but_the_origin_must_still_be_the_pages_own(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    srv = Server(tmp_path_factory.mktemp("star") / "srv")
    srv.start(PALAVER_ALLOWED_HOSTS="*")
    try:
        assert _get(srv, "anything.example").status_code == 401
        same = "Origin: http://anything.example\r\n"
        assert _raw(srv, UPGRADE.format(host="anything.example", extra=same)).startswith(
            b"HTTP/1.1 101"
        )
        cross = "Origin: http://evil.example\r\n"
        assert _raw(srv, UPGRADE.format(host="anything.example", extra=cross)).startswith(
            b"HTTP/1.1 403"
        )
    finally:
        srv.stop()


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("Example.COM.:8000", "example.com"),
        ("[::1]:80", "[::1]"),
        ("[::1]", "[::1]"),
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "[::1]"),
    ],
)
def test_host_names_are_compared_without_port_case_or_final_dot(header: str, name: str) -> None:
    assert host_name(header) == name


def test_the_listening_address_is_allowed_when_it_is_a_specific_one() -> None:
    assert AllowedHosts("192.0.2.7", []).allows("192.0.2.7:8000")
    assert AllowedHosts("palaver.lan", []).allows("palaver.lan")
    assert AllowedHosts("::1", []).allows("[::1]:8000")
    assert not AllowedHosts("0.0.0.0", []).allows("0.0.0.0:8000")
    assert not AllowedHosts("0.0.0.0", []).allows(None)


def test_serving_everywhere_without_allowed_hosts_says_which_hosts_are_accepted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="palaver.auth.hosts"):
        AllowedHosts("0.0.0.0", []).warn_if_open()
    warning = next(r for r in caplog.records if r.levelno == logging.WARNING)
    assert "127.0.0.1, [::1], localhost" in warning.getMessage()
    assert "PALAVER_ALLOWED_HOSTS" in warning.getMessage()
