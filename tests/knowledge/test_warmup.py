"""The local embedding model loads at start-up when an agent will need it, and says so."""

from __future__ import annotations

from tests.support import Server, wait_until


def test_the_model_loads_in_the_background_at_start_up_when_an_agent_uses_memory(
    fresh_server: Server,
) -> None:
    fresh_server.start()
    with fresh_server.login() as owner:
        owner.ok("POST", "/api/agents", json={"name": "Plain"})
    fresh_server.stop()
    assert "loading the embedding model" not in fresh_server.read_log(), "nobody needs it yet"
    fresh_server.start()
    with fresh_server.login() as owner:
        owner.ok("POST", "/api/agents", json={"name": "Rememberer", "tools": ["memory_search"]})
    fresh_server.stop()
    fresh_server.start()
    with fresh_server.login() as owner:
        assert owner.get("/api/me").status_code == 200, "it answers while the model loads"
    wait_until(
        lambda: "the embedding model is ready" in fresh_server.read_log(),
        timeout=120,
        what="the model to be loaded",
    )
    log = fresh_server.read_log()
    assert log.index("loading the embedding model in the background") < log.index(
        "the embedding model is ready"
    )
