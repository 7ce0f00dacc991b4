"""What people wrote stays out of the server log above DEBUG where it travels in URLs: a web
search's terms (httpx logs each request's URL at INFO) and a memory search's `q` (uvicorn's
access line)."""

from __future__ import annotations

from urllib.parse import quote, quote_plus

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text, tool_call, tool_calls
from tests.fakes.search_servers import FakeSearchServer
from tests.support import Server, Ws, new_agent, new_channel, post

TERMS = "opening hours of the Vienna opera box office"
REMEMBERED = "what Ferdinand said about the spare keys"


def test_search_terms_stay_out_of_the_log(fresh_server: Server, fake_openai: FakeOpenAI) -> None:
    with FakeSearchServer("searxng") as searxng:
        fresh_server.start()
        with fresh_server.login() as owner:
            settings = {
                "providers": {"oai": {"type": "openai", "baseUrl": f"{fake_openai.url}/v1"}},
                "webSearch": {"provider": "searxng", "baseUrl": searxng.base_url},
            }
            owner.ok("PUT", "/api/settings", json=settings)
            agent = new_agent(owner, model="oai/m", tools=["web_search"])
            channel = new_channel(owner, [agent["id"]])
            fake_openai.enqueue(
                tool_calls(tool_call("web_search", {"query": TERMS})), text("Found it.")
            )
            with Ws(fresh_server, owner.token) as ws:
                ws.subscribe(channel["id"])
                post(owner, channel["id"], f"@{agent['name']} look it up")
                end = ws.expect("stream_end", timeout=30)
            assert "error" not in end["data"]
            assert searxng.last.query["q"] == TERMS
            owner.ok("GET", f"/api/agents/{agent['id']}/memories", params={"q": REMEMBERED})
        fresh_server.stop()
    log = fresh_server.read_log()
    assert "/memories?" in log, "the access line is kept, without its query string"
    for written in (TERMS, REMEMBERED):
        for form in (written, quote_plus(written), quote(written)):
            assert form not in log, (form, log)
