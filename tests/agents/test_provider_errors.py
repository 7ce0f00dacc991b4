"""What a failed reply says in its channel, which guests read: the provider's name and what
went wrong, never its address, its key or the vendor's own words; the server log keeps those
for the owner.

A real server runs agents against real loopback servers: the fake OpenAI and Anthropic
servers scripted to fail, and a closed port for a provider that is down.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import Reply, broken, hang, http_error, malformed, stream_error, text
from tests.support import Guest, Server, Ws, free_port, new_agent, new_channel

KEY = "sk-secret-0123456789abcdef"
VENDOR_SECRET = "upstream 10.9.8.7:11434 refused"
"""Words a vendor or its proxy might send with an error: the channel must not repeat them."""


@dataclass(frozen=True)
class Case:
    provider: str
    script: Reply | None
    """What the fake answers; None for the provider whose port is closed."""
    said: str
    """The error the channel gets."""
    logged: str
    """What the owner's log says besides the address."""


CASES = [
    Case("ollama", None, "The model provider 'ollama' did not answer.", "Could not reach"),
    Case(
        "oai",
        http_error(401, f"Incorrect API key provided: {KEY[:7]}...{KEY[-4:]}"),
        "The model provider 'oai' refused the key (HTTP 401).",
        "answered 401: Incorrect API key provided",
    ),
    Case(
        "oai",
        http_error(500, VENDOR_SECRET),
        "The model provider 'oai' failed (HTTP 500).",
        f"answered 500: {VENDOR_SECRET}",
    ),
    Case(
        "slow",
        hang(),
        "The model provider 'slow' did not answer within 0.5 seconds.",
        "did not answer within 0.5 seconds",
    ),
    Case(
        "oai",
        malformed(text("a", "b"), after=1),
        "The model provider 'oai' sent a malformed answer.",
        "sent a malformed answer",
    ),
    Case(
        "ant",
        broken(text("a", "b", "c"), after=1),
        "The connection to the model provider 'ant' broke during the answer.",
        "broke during the answer",
    ),
    Case(
        "ant",
        stream_error(text("a", "b"), after=1, message=VENDOR_SECRET),
        "The model provider 'ant' failed during the answer.",
        f"failed during the answer: {VENDOR_SECRET}",
    ),
]


@pytest.fixture
def running(
    fresh_server: Server, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> Iterator[Server]:
    fresh_server.start()
    yield fresh_server
    fake_openai.release()
    fake_anthropic.release()


def test_a_failed_reply_names_the_provider_to_the_channel_and_its_address_to_the_log(
    running: Server, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    providers = {
        "ollama": {"type": "openai", "baseUrl": f"{down}/v1"},
        "oai": {"type": "openai", "baseUrl": f"{fake_openai.url}/v1", "apiKey": KEY},
        "slow": {"type": "openai", "baseUrl": f"{fake_openai.url}/v1", "timeoutSeconds": 0.5},
        "ant": {"type": "anthropic", "baseUrl": fake_anthropic.url, "apiKey": KEY},
    }
    fakes = {"oai": fake_openai, "slow": fake_openai, "ant": fake_anthropic}
    with running.login() as owner, Guest(running, owner) as guest:
        owner.ok("PUT", "/api/settings", json={"providers": providers})
        agents = {name: new_agent(owner, model=f"{name}/m") for name in providers}
        channel = new_channel(
            owner, agent_ids=[a["id"] for a in agents.values()], member_ids=[guest.id]
        )
        with Ws(running, guest.api.token) as ws:
            ws.subscribe(channel["id"])
            for case in CASES:
                if case.script is not None:
                    fakes[case.provider].enqueue(case.script)
                agent = agents[case.provider]
                body = {"channelId": channel["id"], "content": f"@{agent['name']} hello"}
                owner.ok("POST", "/api/messages", json=body)
                end = ws.expect("stream_end", timeout=30)
                reply = ws.expect("message", timeout=10, id=end["data"]["messageId"])
                assert end["data"]["error"] == case.said, case
                assert reply["data"]["metadata"]["error"] == case.said, case
            listed = guest.api.ok("GET", "/api/messages", params={"channelId": channel["id"]})
    said = [m["metadata"].get("error") for m in listed["messages"] if m.get("agentId")]
    assert sorted(said) == sorted(case.said for case in CASES)
    seen = json.dumps([listed, ws.seen])
    addresses = {name: str(p["baseUrl"]).removesuffix("/v1") for name, p in providers.items()}
    for secret in [*addresses.values(), KEY, KEY[-4:], VENDOR_SECRET, "127.0.0.1", "10.9.8.7"]:
        assert secret not in seen, secret
    log = running.read_log()
    for case in CASES:
        assert any(
            addresses[case.provider] in line and case.logged in line and "WARNING" in line
            for line in log.splitlines()
        ), (case, log[-3000:])
    assert KEY not in log
