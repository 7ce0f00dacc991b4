"""A configuration that needs an extra this install lacks is refused in one line naming it.

Each command runs in a Python whose import system is told the extra's modules are absent
(`sys.modules[name] = None` makes `import name` raise ImportError, as a missing package does),
so the suite needs no second environment for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import OWNER_KEY, free_port

WITHOUT = (
    "import sys; sys.modules.update(dict.fromkeys(sys.argv.pop(1).split(','))); "
    "from palaver.cli import main; raise SystemExit(main())"
)
"""`python -c WITHOUT a,b palaver-arguments...`: the `palaver` command without modules a, b."""

PG_URL = "postgresql://palaver:hunter2-secret@127.0.0.1:1/palaver"


def _palaver_without(
    absent: str, *args: str, cwd: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PALAVER_")}
    clean.pop("DATABASE_URL", None)
    clean.pop("REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, absent, *args],
        env={**clean, "OWNER_KEY": OWNER_KEY, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _one_line(done: subprocess.CompletedProcess[str], extra: str) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"pip install 'palaver[{extra}]'" in lines[0]
    return lines[0]


@pytest.mark.parametrize("absent", ["asyncpg,psycopg", "asyncpg", "psycopg"])
def test_serve_on_postgresql_without_its_drivers_names_the_postgres_extra(
    tmp_path: Path, absent: str
) -> None:
    done = _palaver_without(
        absent, "serve", "--port", str(free_port()), cwd=tmp_path, DATABASE_URL=PG_URL
    )
    line = _one_line(done, "postgres")
    assert all(name in line for name in absent.split(","))
    assert "hunter2" not in done.stderr + done.stdout
    assert not (tmp_path / "data").exists(), "nothing is prepared for a refused start"


def test_serve_with_redis_url_without_the_client_names_the_redis_extra(tmp_path: Path) -> None:
    done = _palaver_without(
        "redis", "serve", "--port", str(free_port()), cwd=tmp_path, REDIS_URL="redis://127.0.0.1:1"
    )
    assert "REDIS_URL" in _one_line(done, "redis")


def test_migrate_db_to_postgresql_without_psycopg_names_the_postgres_extra(
    tmp_path: Path,
) -> None:
    done = _palaver_without("psycopg", "migrate-db", "--to", PG_URL, cwd=tmp_path)
    assert "--to" in _one_line(done, "postgres")
    assert "hunter2" not in done.stderr + done.stdout


def test_reindex_on_postgresql_without_its_drivers_names_the_postgres_extra(
    tmp_path: Path,
) -> None:
    done = _palaver_without("asyncpg,psycopg", "reindex", cwd=tmp_path, DATABASE_URL=PG_URL)
    _one_line(done, "postgres")


def test_the_app_needs_neither_extra_without_their_urls() -> None:
    """SQLite and one node: the app is built without the Redis client or PostgreSQL drivers."""
    code = (
        "import sys; sys.modules.update(dict.fromkeys(['redis', 'asyncpg', 'psycopg'])); "
        "from palaver.app import create_app"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
