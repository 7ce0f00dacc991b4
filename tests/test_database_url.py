"""`DATABASE_URL` as tools print it; the driver suffix is the project's business."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import make_url

from palaver.config import Config
from palaver.store.urls import app_url, asyncpg_connect_args, shown, sync_url

SOCKET = "postgresql://postgres:@/postgres?host=/tmp/pg-socket-dir"


def test_a_plain_postgresql_url_gets_asyncpg_for_the_app_and_psycopg_for_migrations() -> None:
    plain = "postgresql://palaver:secret@db.internal:5433/chat"
    assert app_url(plain) == "postgresql+asyncpg://palaver:secret@db.internal:5433/chat"
    assert sync_url(plain) == "postgresql+psycopg://palaver:secret@db.internal:5433/chat"


@pytest.mark.parametrize(
    "given",
    [
        "postgres://palaver:secret@db/chat",
        "postgresql+psycopg2://palaver:secret@db/chat",
        "postgresql+asyncpg://palaver:secret@db/chat",
        "POSTGRESQL://palaver:secret@db/chat",
    ],
)
def test_any_driver_suffix_or_the_short_scheme_means_the_same_database(given: str) -> None:
    assert app_url(given) == "postgresql+asyncpg://palaver:secret@db/chat"


def test_the_unix_socket_form_pgserver_prints_keeps_its_socket_directory() -> None:
    url = make_url(app_url(SOCKET))
    assert url.drivername == "postgresql+asyncpg"
    assert (url.username, url.password, url.host, url.database) == (
        "postgres",
        "",
        None,
        "postgres",
    )
    assert url.query == {"host": "/tmp/pg-socket-dir"}
    assert make_url(sync_url(SOCKET)).query == {"host": "/tmp/pg-socket-dir"}


@pytest.mark.parametrize(
    ("given", "password"),
    [
        ("postgresql://bob:p%40ss%3Aw%2Fd%3F%25@db/chat", "p@ss:w/d?%"),
        ("postgresql://bob:p@ss:w/d@db/chat", "p@ss:w/d"),
        ("postgresql://bob:pa ss#1@db/chat", "pa ss#1"),
    ],
)
def test_passwords_with_special_characters_survive_encoded_or_raw(
    given: str, password: str
) -> None:
    for url in (make_url(app_url(given)), make_url(sync_url(given))):
        assert (url.username, url.password, url.host, url.database) == (
            "bob",
            password,
            "db",
            "chat",
        )


def test_sqlite_urls_get_aiosqlite_and_pysqlite() -> None:
    assert app_url("sqlite:////srv/palaver.db") == "sqlite+aiosqlite:////srv/palaver.db"
    assert sync_url("sqlite+aiosqlite:////srv/palaver.db") == "sqlite+pysqlite:////srv/palaver.db"


def test_a_url_of_another_database_is_refused() -> None:
    with pytest.raises(ValueError, match="postgresql://"):
        app_url("mysql://root:pw@db/chat")


def test_the_url_shown_in_logs_never_holds_the_password() -> None:
    text = shown("postgresql://bob:hunter2-very-secret@db/chat")
    assert "hunter2" not in text and "bob" in text and "db/chat" in text
    assert "hunter2" not in shown("postgresql://bob:hunter2@")


def test_the_config_gives_the_app_the_asyncpg_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OWNER_KEY", "an owner key long enough")
    monkeypatch.setenv("DATABASE_URL", SOCKET)
    assert Config().db_url == app_url(SOCKET)


def test_the_config_refuses_an_unreadable_url_without_echoing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OWNER_KEY", "an owner key long enough")
    monkeypatch.setenv("DATABASE_URL", "mysql://root:hunter2@db/chat")
    with pytest.raises(ValidationError) as caught:
        Config()
    message = caught.value.errors()[0]["msg"]  # what `palaver serve` prints
    assert "postgresql://" in message and "hunter2" not in message


def test_without_a_password_or_password_file_asyncpg_is_told_it_is_empty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", f"{tmp_path}/none-here")
    assert asyncpg_connect_args(app_url(SOCKET)) == {"password": ""}
    assert asyncpg_connect_args(app_url("postgresql://bob:pw@db/chat")) == {}
