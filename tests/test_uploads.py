"""Uploads: safe names that never collide, the size limit, and how files are served back."""

from __future__ import annotations

import re
import socket
import time
import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.support import Api, Server, files_under, unique, wait_until

LIMIT = 25 * 1024 * 1024
BOUNDARY = "palaver-test-boundary"


def _multipart(filename: str, data: bytes, content_type: str = "application/octet-stream") -> bytes:
    """A form with one file part, its name written raw (only quotes escaped), as a hostile client
    could send it."""
    quoted = filename.replace('"', "%22")
    head = (
        f"--{BOUNDARY}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{quoted}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n"
    ).encode()
    return head + data + f"\r\n--{BOUNDARY}--\r\n".encode()


def _upload(api: Api, filename: str, data: bytes, content_type: str = "text/plain") -> str:
    response = api.post(
        "/api/upload",
        content=_multipart(filename, data, content_type),
        headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"url"}
    url: str = response.json()["url"]
    return url


def _month() -> str:
    return datetime.now(UTC).strftime("%Y-%m")


def _stored_path(server: Server, url: str) -> Path:
    match = re.fullmatch(r"/uploads/(\d{4}-\d{2})/([^/]+)", url)
    assert match, url
    assert match.group(1) == _month()
    return server.data_dir / "uploads" / match.group(1) / unquote(match.group(2))


def _uploads(server: Server) -> set[Path]:
    return files_under(server.data_dir / "uploads")


def test_an_upload_is_stored_under_its_month_and_served_back(server: Server, owner: Api) -> None:
    url = _upload(owner, "hello.txt", b"hello, world\n")
    path = _stored_path(server, url)
    assert re.fullmatch(r"hello-[0-9a-f]{8}\.txt", path.name)
    assert path.read_bytes() == b"hello, world\n"
    response = owner.get(url)
    assert response.status_code == 200
    assert response.content == b"hello, world\n"


def test_the_same_name_twice_never_overwrites(server: Server, owner: Api) -> None:
    first = _upload(owner, "same.txt", b"first")
    second = _upload(owner, "same.txt", b"second")
    assert first != second
    assert owner.get(first).content == b"first"
    assert owner.get(second).content == b"second"


@pytest.mark.parametrize(
    "client_name",
    [
        "../../../etc/passwd",
        "/etc/passwd",
        "..\\..\\windows\\system.ini",
        "C:\\Users\\me\\report.pdf",
        "a/../../b.txt",
        ".htaccess",
        "..",
        ".",
        "...",
        "..hidden..txt",
        "nul\x00byte.txt",
        "bell\x07and\x1funit\x7fdel.txt",
        "right-to-left\u202etxt.exe",
        "zero\u200bwidth.txt",
        "x" * 300 + ".txt",
        "é" * 200 + ".txt",
        "日本語のファイル名" * 20 + ".pdf",
        "my report (final) #2?.pdf",
    ],
)
def test_any_client_name_is_made_safe(server: Server, owner: Api, client_name: str) -> None:
    data = unique("content-").encode()
    before = files_under(server.data_dir)
    url = _upload(owner, client_name, data)
    path = _stored_path(server, url)
    name = path.name
    assert "/" not in name and "\\" not in name and ".." not in name
    assert not name.startswith(".")
    assert all(unicodedata.category(ch)[0] != "C" for ch in name), ascii(name)
    assert 1 <= len(name) <= 128 and len(name.encode()) <= 255
    assert files_under(server.data_dir) - before == {path}, "one new file, in its month's folder"
    assert path.read_bytes() == data
    assert owner.get(url).content == data


def test_a_name_keeps_its_letters_and_extension(server: Server, owner: Api) -> None:
    url = _upload(owner, "Résumé 2024.pdf", b"%PDF-1.4")
    assert re.fullmatch(r"Résumé_2024-[0-9a-f]{8}\.pdf", _stored_path(server, url).name)
    archive = _upload(owner, "backup.tar.gz", b"gz")
    assert re.fullmatch(r"backup-[0-9a-f]{8}\.tar\.gz", _stored_path(server, archive).name)
    long_url = _upload(owner, "y" * 300 + ".tar.gz", b"gz")
    assert _stored_path(server, long_url).name.endswith(".tar.gz")


@pytest.mark.parametrize(
    ("name", "media_type", "disposition"),
    [
        ("photo.png", "image/png", "inline"),
        ("photo.jpg", "image/jpeg", "inline"),
        ("anim.gif", "image/gif", "inline"),
        ("paper.pdf", "application/pdf", "inline"),
        ("notes.txt", "text/plain; charset=utf-8", "inline"),
        ("page.html", "text/html", "attachment"),
        ("page.htm", "text/html", "attachment"),
        ("logo.svg", "image/svg+xml", "attachment"),
        ("data.bin", "application/octet-stream", "attachment"),
        ("no-extension", "application/octet-stream", "attachment"),
        ("script.js", None, "attachment"),
        ("readme.md", None, "attachment"),
    ],
)
def test_downloads_are_inline_only_for_images_pdf_and_plain_text(
    owner: Api, name: str, media_type: str | None, disposition: str
) -> None:
    """The stored name decides, never the type the client claimed: here every file claims to be
    a harmless PNG."""
    url = _upload(owner, name, b"<html><script>alert(1)</script></html>", "image/png")
    response = owner.get(url)
    assert response.status_code == 200
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    if media_type is not None:
        assert response.headers["Content-Type"].split(";")[0] == media_type.split(";")[0]
    if media_type and media_type.startswith("text/plain"):
        assert response.headers["Content-Type"] == media_type
    assert response.headers["Content-Disposition"].startswith(f"{disposition};")
    stored = url.rsplit("/", 1)[1]
    assert f"filename*=UTF-8''{stored}" in response.headers["Content-Disposition"]


def test_a_download_needs_a_session(server: Server, owner: Api) -> None:
    url = _upload(owner, "private.txt", b"for members")
    with server.client() as anonymous:
        response = anonymous.get(url)
    assert response.status_code == 401
    assert set(response.json()) - {"field"} == {"error"}
    assert owner.get(url).content == b"for members"


@pytest.mark.parametrize(
    "path",
    [
        "/uploads/{month}/missing-00000000.txt",
        "/uploads/2020-1/x.txt",
        "/uploads/..%2F..%2Fpalaver.db",
        "/uploads/{month}/..%2F..%2Fpalaver.db",
        "/uploads/{month}/.hidden",
        "/uploads/{month}/" + "é" * 128,
    ],
)
def test_unknown_or_unsafe_download_paths_answer_404(owner: Api, path: str) -> None:
    response = owner.get(path.format(month=_month()))
    assert response.status_code == 404
    assert set(response.json()) - {"field"} == {"error"}


def test_the_largest_allowed_file_is_accepted(server: Server, owner: Api) -> None:
    url = _upload(owner, "big.bin", b"\0" * LIMIT)
    assert _stored_path(server, url).stat().st_size == LIMIT
    _stored_path(server, url).unlink()


@pytest.mark.parametrize("size", [LIMIT + 1, LIMIT + 2 * 1024 * 1024], ids=["by-1", "by-2mib"])
def test_an_oversize_file_answers_413_and_leaves_nothing_on_disk(
    server: Server, owner: Api, size: int
) -> None:
    before = _uploads(server)
    response = owner.post("/api/upload", files={"file": ("huge.bin", b"\0" * size)})
    assert response.status_code == 413
    assert set(response.json()) - {"field"} == {"error"}
    assert _uploads(server) == before
    assert owner.get("/api/me").status_code == 200, "the connection is still usable"


def test_an_upload_that_stops_halfway_leaves_nothing_on_disk(server: Server, owner: Api) -> None:
    before = _uploads(server)
    body = _multipart("half.bin", b"\1" * (4 * 1024 * 1024))
    head = (
        f"POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Cookie: session={owner.token}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(head + body[: len(body) // 2])
        wait_until(
            lambda: any(p.stat().st_size > 0 for p in _uploads(server) - before),
            what="the partial file to appear",
        )
    wait_until(lambda: _uploads(server) == before, what="the partial file to be removed")
    time.sleep(0.2)
    assert _uploads(server) == before


@pytest.mark.parametrize("cut", [b"\r\n--" + BOUNDARY.encode() + b"--\r\n", b"--\r\n"])
def test_a_form_whose_closing_boundary_never_comes_answers_400_and_keeps_nothing(
    server: Server, owner: Api, cut: bytes
) -> None:
    before = _uploads(server)
    body = _multipart("cut.txt", b"the first half of a file")
    assert body.endswith(cut)
    response = owner.post(
        "/api/upload",
        content=body[: -len(cut)],
        headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    assert "closing boundary" in response.json()["error"]
    assert response.status_code == 400
    assert _uploads(server) == before


@pytest.fixture(scope="module")
def impatient_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("impatient") / "srv")
    srv.start(PALAVER_UPLOAD_IDLE_SECONDS="1")
    yield srv
    srv.stop()


@pytest.mark.parametrize("path", ["/api/upload", "/api/rag/upload"])
def test_an_upload_that_sends_nothing_for_a_while_is_ended_and_removed(
    impatient_server: Server, path: str
) -> None:
    server = impatient_server
    before = _uploads(server) | files_under(server.data_dir / "incoming")
    with server.login() as api:
        body = _multipart("slow.bin", b"\1" * 100_000)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Cookie: session={api.token}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(head + body[:50_000])
            started = time.monotonic()
            answer = sock.recv(4096)
            waited = time.monotonic() - started
            while part := sock.recv(4096):
                answer += part
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"sent nothing for 1 seconds" in answer
        assert 0.8 <= waited < 5
    after = _uploads(server) | files_under(server.data_dir / "incoming")
    assert after == before


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b'{"file": "x"}', "application/json"),
        (_multipart("x.txt", b"x").replace(b'name="file"', b'name="document"'), None),
        (b"--" + BOUNDARY.encode() + b"\r\nnonsense", None),
        (_multipart("", b"x"), None),
    ],
    ids=["not-multipart", "no-file-field", "malformed", "no-file-name"],
)
def test_a_form_without_a_file_answers_400(
    server: Server, owner: Api, content: bytes, content_type: str | None
) -> None:
    before = _uploads(server)
    response = owner.post(
        "/api/upload",
        content=content,
        headers={"Content-Type": content_type or f"multipart/form-data; boundary={BOUNDARY}"},
    )
    assert response.status_code == 400, response.text
    assert set(response.json()) - {"field"} == {"error"}
    assert _uploads(server) == before


def test_a_name_that_draws_a_taken_tag_never_overwrites_the_other_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from palaver.actions import uploads

    names = iter(["image-0000abcd.png", "image-0000abcd.png", "image-1111ef01.png"])
    monkeypatch.setattr(uploads, "safe_name", lambda _: next(names))
    folder = tmp_path / "2026-11"
    folder.mkdir()
    first, second = tmp_path / ".part-1", tmp_path / ".part-2"
    first.write_bytes(b"first")
    second.write_bytes(b"second")
    assert uploads._place(first, folder, "image.png") == "image-0000abcd.png"
    assert uploads._place(second, folder, "image.png") == "image-1111ef01.png"
    assert (folder / "image-0000abcd.png").read_bytes() == b"first"
    assert (folder / "image-1111ef01.png").read_bytes() == b"second"
    assert not first.exists() and not second.exists()
