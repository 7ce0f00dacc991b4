"""A server with no provider, no Redis and no telemetry configured loads none of their packages:
not at start, not for a login, a post or a history read. Each is imported where its feature is
first used, so a small box pays for what it runs (issue 26).

What the server imported is read from its `sys.modules` through `GET /api/debug/modules`, one
of the hooks mounted only with `PALAVER_DEBUG_HOOKS=1` (the test harness sets it); without it
the path answers 404 like any unknown API path (tests/test_first_run.py restarts a server so).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from alembic.script import ScriptDirectory

from palaver.store import schema_version
from palaver.store.migrate import MIGRATIONS
from tests.support import Server, history, new_channel, post

NEVER_AT_START = (
    "openai",
    "anthropic",
    "mcp",
    "onnxruntime",
    "numpy",
    "tokenizers",
    "pypdf",
    "jsonschema",
    "redis",
    "opentelemetry.sdk",
    "opentelemetry.exporter",
    "prometheus_client",
)
"""Provider SDKs, MCP, the local embedding model's runtime and what the knowledge base needs,
Redis, the OpenTelemetry SDK with its exporters (the API alone is loaded: its no-op spans are
what "off" costs), and prometheus-client while `PALAVER_METRICS_ADDRESS` is unset."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Of this module's own: another test's provider or agent would load what is looked for."""
    srv = Server(tmp_path_factory.mktemp("lazy"))
    srv.start()
    yield srv
    srv.stop()


def _loaded(server: Server) -> set[str]:
    response = httpx.get(f"{server.base_url}/api/debug/modules", timeout=10)
    assert response.status_code == 200, response.text
    return set(response.json()["modules"])


def _use(server: Server) -> None:
    with server.login() as owner:
        channel_id = str(new_channel(owner)["id"])
        post(owner, channel_id, "nothing here needs a model")
        assert history(owner, channel_id)[-1]["content"] == "nothing here needs a model"


def _found(loaded: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(
        package
        for package in packages
        if any(name == package or name.startswith(package + ".") for name in loaded)
    )


def test_a_first_start_login_and_history_load_no_feature_left_unconfigured(
    server: Server,
) -> None:
    _use(server)
    loaded = _loaded(server)
    assert "palaver.app" in loaded and "sqlalchemy" in loaded  # the list is the process's own
    assert _found(loaded, NEVER_AT_START) == []


def test_a_restart_on_a_current_schema_leaves_alembic_unloaded(server: Server) -> None:
    """The migration check is one read of `alembic_version`; Alembic comes in only to apply."""
    logged = len(server.read_log())
    server.stop()
    server.start()
    _use(server)
    assert _found(_loaded(server), (*NEVER_AT_START, "alembic")) == []
    assert re.search(r"(?m)INFO .*: database at revision \d{4}$", server.read_log()[logged:])


def test_the_newest_revision_read_from_the_scripts_is_alembics() -> None:
    """The start's one read compares with this; were the scripts ever to say it otherwise
    (a merge of two heads), `head()` must say None and leave the decision to Alembic."""
    assert schema_version.head() == ScriptDirectory(str(MIGRATIONS)).get_current_head()
