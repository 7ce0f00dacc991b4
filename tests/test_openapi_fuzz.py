"""The OpenAPI schema is the contract: schemathesis fuzzes every operation of a real server,
as the owner and as a guest, and every answer must be one the schema promises.

Schemathesis' default checks run on every case: no 5xx, statuses, content types, headers and
bodies as declared, schema-valid requests accepted (2xx, or 401/403/404/409/429, which say
"not you", "no such thing", "not now" rather than "malformed") and schema-invalid ones refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis import Case
from schemathesis.checks import CheckFunction
from schemathesis.config import SchemathesisConfig
from schemathesis.schemas import BaseSchema
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.support import Api, Server, new_agent, new_channel, unique

SEED = 20240601
MAX_EXAMPLES = 3
"""Random cases per operation and role, beside the deterministic coverage cases."""

BASELINE: dict[str, Any] = {
    "limits": {"messagesPerMinute": 100_000, "messageBurst": 100_000, "maxMessageChars": 32_000},
    "defaultModel": "builtin/echo",
    "embedding": {"provider": "local", "model": "all-MiniLM-L6-v2"},
    "webSearch": {"provider": None, "baseUrl": None, "apiKey": None},
}
"""Rate limits a fuzzing run never reaches (it exercises the contract, not the throttles); the
rest as the schema states it, the defaults."""

OWN_ADDRESS = {"X-Forwarded-For": "192.0.2.1"}
"""Where the test's own logins come from (the server trusts the proxy header): the fuzzed
wrong passwords get 127.0.0.1 throttled, which must not lock the test itself out."""

schemathesis.openapi.format("emoji", st.sampled_from(["🤖", "🦉", "👩‍🔬", "🇫🇷", "❤️"]))
"""What the schema's `format: emoji` (an agent's avatar) means: a single emoji."""


def restore_settings(owner: Api, baseline: dict[str, Any]) -> None:
    """Undo what a fuzzed settings change did, before any other request runs: it may name
    MCP servers (commands) or model endpoints that nothing should ever start or call."""
    current = owner.ok("GET", "/api/settings")["settings"]
    patch = {
        **baseline,
        "providers": dict.fromkeys(current["providers"]),
        "mcpServers": dict.fromkeys(current["mcpServers"]),
        "prices": dict.fromkeys(current["prices"]),
        "budgets": {
            "agents": dict.fromkeys(current["budgets"]["agents"]),
            "guests": dict.fromkeys(current["budgets"]["guests"]),
            "total": None,
        },
    }
    assert owner.ok("PUT", "/api/settings", json=patch)["settings"] == baseline


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of its own: fuzzing fills it with records and changes its settings."""
    srv = Server(tmp_path_factory.mktemp("fuzz"), env={"PALAVER_TRUST_PROXY": "1"})
    srv.start()
    with srv.login() as owner:
        owner.ok("PUT", "/api/settings", json=BASELINE)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def fuzz_owner(fuzz_server: Server) -> Iterator[Api]:
    with fuzz_server.login(headers=OWN_ADDRESS) as owner:
        yield owner


@pytest.fixture(scope="module")
def baseline(fuzz_owner: Api) -> dict[str, Any]:
    """The settings every case starts from."""
    settings: dict[str, Any] = fuzz_owner.ok("GET", "/api/settings")["settings"]
    assert settings["providers"] == settings["mcpServers"] == {}
    return settings


@pytest.fixture(scope="module")
def guest_key(fuzz_owner: Api) -> str:
    """A guest with a channel of its own, so that its cases reach something beside 404s."""
    body = fuzz_owner.ok("POST", "/api/guests", json={"name": unique("fuzz-guest-")})
    agent = new_agent(fuzz_owner)
    new_channel(fuzz_owner, agent_ids=[agent["id"]], member_ids=[body["user"]["id"]])
    key: str = body["key"]
    return key


@pytest.fixture(scope="module", params=["owner", "guest"])
def password(request: pytest.FixtureRequest, fuzz_server: Server) -> str:
    """What the role under test logs in with."""
    if request.param == "owner":
        return fuzz_server.owner_key
    key: str = request.getfixturevalue("guest_key")
    return key


@pytest.fixture(scope="module")
def session(fuzz_server: Server, password: str) -> Iterator[Api]:
    with fuzz_server.login(password, headers=OWN_ADDRESS) as api:
        yield api


@pytest.fixture(scope="module")
def api_schema(fuzz_server: Server, password: str) -> BaseSchema:
    """The server's own schema (the same for everyone), loaded once per role."""
    config = SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "base-url": fuzz_server.base_url,
            "generation": {"max-examples": MAX_EXAMPLES},
            "request-timeout": 30,
            "phases": {"coverage": {"unexpected-methods": ["patch"]}},
        }
    )
    return schemathesis.openapi.from_url(f"{fuzz_server.base_url}/api/openapi.json", config=config)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
def test_every_operation_keeps_the_schema_s_promises(
    case: Case[Any],
    fuzz_server: Server,
    fuzz_owner: Api,
    baseline: dict[str, Any],
    session: Api,
    password: str,
) -> None:
    token = session.token
    if case.operation.label == "POST /api/logout":
        # A session of its own to end: the role's session serves every other case.
        with fuzz_server.login(password, headers=OWN_ADDRESS) as throwaway:
            token = throwaway.token
    excluded: list[CheckFunction] = []
    if case.operation.label == "GET /api/search":
        # Its grammar (and its cursors) go beyond what a JSON schema states: a query such as
        # `from:` or `"unbalanced` is any string to the schema and a 400 to the contract
        # (docs/SPEC.md, section 11). Every other check holds, no 5xx among them.
        excluded.append(positive_data_acceptance)
    if case.operation.label == "POST /api/channels/import":
        # What the file must hold (an export, told by its content) is more than a schema can
        # state: any bytes are a `binary` to it, and a 415 or 400 to the contract (docs/SPEC.md,
        # section 17).
        excluded.append(positive_data_acceptance)
    backups = case.body.get("backups") if isinstance(case.body, dict) else None
    folder = backups.get("dir") if isinstance(backups, dict) else None
    fuzzed_dir = isinstance(folder, str) and folder.startswith("/") and "\0" not in folder
    if case.operation.label == "PUT /api/settings" and fuzzed_dir:
        # A fuzzed schedule is made at once: into the server's own folder, not anywhere (a
        # folder the schema refuses is left for the server to refuse).
        assert isinstance(backups, dict)
        backups["dir"] = str(fuzz_server.data_dir / "fuzzed-backups")
    try:
        case.call_and_validate(headers={"Cookie": f"session={token}"}, excluded_checks=excluded)
    finally:
        if case.operation.label == "PUT /api/settings":
            restore_settings(fuzz_owner, baseline)
