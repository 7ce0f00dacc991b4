"""A logged-in person's page carries the first screen's data (`api/first_screen.py`): exactly
what the API answers that person, nothing of a channel it cannot read, and never markup."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from tests.support import Api, Guest, Server, new_agent, new_channel, post

CARRIED = re.compile(r'<script type="application/json" id="first-screen">(.*?)</script>', re.S)


def _carried(page: httpx.Response) -> dict[str, Any] | None:
    found = CARRIED.search(page.text)
    return None if found is None else dict(json.loads(found.group(1)))


def _page(api: Api, path: str) -> httpx.Response:
    page = api.get(path)
    assert page.status_code == 200
    return page


def test_the_page_carries_what_the_api_answers_the_same_person(owner: Api) -> None:
    agent = new_agent(owner)
    channel = new_channel(owner, agent_ids=[agent["id"]])["id"]
    root = post(owner, channel, "a question")
    post(owner, channel, "a reply", threadId=root)
    for path in (f"/c/{channel}", f"/c/{channel}/t/{root}"):
        page = _page(owner, path)
        assert page.headers["cache-control"] == "no-store"
        assert "cookie" in page.headers["vary"].lower()
        assert "etag" not in page.headers
        carried = _carried(page)
        assert carried is not None
        assert carried["me"] == owner.ok("GET", "/api/me")
        assert carried["channels"] == owner.ok("GET", "/api/channels")
        assert carried["agents"] == owner.ok("GET", "/api/agents")
        messages = carried["messages"]
        assert messages["channelId"] == channel and messages["limit"] == 50
        assert messages["page"] == owner.ok(
            "GET", "/api/messages", params={"channelId": channel, "limit": 50}
        )
    # Any other screen carries the session's data, and no channel's messages.
    for path in ("/", "/admin/agents", "/no/such/page"):
        carried = _carried(_page(owner, path))
        assert carried is not None and "messages" not in carried


def test_a_page_without_a_valid_session_is_the_shared_cached_one(server: Server) -> None:
    for cookies in ({}, {"session": "not-a-session"}):
        with server.client(cookies=cookies) as anonymous:
            page = _page(anonymous, "/c/ch_01ARZ3NDEKTSV4RRFFQ69G5FAV")
            assert _carried(page) is None
            assert page.headers["cache-control"] == "no-cache"
            again = anonymous.get("/", headers={"if-none-match": page.headers["etag"]})
            assert again.status_code == 304


def test_a_guests_page_carries_only_its_own_channels_and_agents(server: Server, owner: Api) -> None:
    seen_agent = new_agent(owner)
    hidden_agent = new_agent(owner)
    with Guest(server, owner) as guest:
        mine = new_channel(owner, member_ids=[guest.id], agent_ids=[seen_agent["id"]])["id"]
        other = new_channel(owner, agent_ids=[hidden_agent["id"]])["id"]
        post(owner, mine, "for the guest")
        secret = post(owner, other, "the owner's secret plan")
        carried = _carried(_page(guest.api, f"/c/{mine}"))
        assert carried is not None
        assert carried["me"] == guest.api.ok("GET", "/api/me")
        assert carried["channels"] == guest.api.ok("GET", "/api/channels")
        assert carried["agents"] == guest.api.ok("GET", "/api/agents")
        assert [a["id"] for a in carried["agents"]["agents"]] == [seen_agent["id"]]
        assert other not in json.dumps(carried["channels"])
        # A deep link to a channel it is not in: no messages, and nothing of the channel.
        page = _page(guest.api, f"/c/{other}")
        carried = _carried(page)
        assert carried is not None and "messages" not in carried
        assert "secret plan" not in page.text and secret not in page.text
        assert hidden_agent["id"] not in page.text


def test_message_text_cannot_end_the_data_block_or_add_markup(owner: Api) -> None:
    channel = new_channel(owner)["id"]
    hostile = "</script><script>alert(1)</script><!-- <SCRIPT> </ScRiPt >"
    post(owner, channel, hostile)
    page = _page(owner, f"/c/{channel}")
    assert page.text.count("</script>") == 2  # the data block's own end and the module's
    assert "<script>alert" not in page.text and "<!--" not in page.text
    carried = _carried(page)
    assert carried is not None
    assert carried["messages"]["page"]["messages"][-1]["content"] == hostile


def test_a_head_request_gets_the_shared_page(owner: Api) -> None:
    answer = owner.head("/")
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "no-cache"


def test_an_escaped_address_is_read_as_the_clients_router_reads_it(owner: Api) -> None:
    channel = new_channel(owner)["id"]
    post(owner, channel, "escaped")
    escaped = "/c/" + "".join(f"%{byte:02X}" for byte in channel.encode())
    carried = _carried(_page(owner, escaped))
    assert carried is not None and carried["messages"]["channelId"] == channel
    # Not a channel: the page, with no messages (or, if the database refuses the id outright,
    # without the data at all), never an error.
    for path in ("/c/%00", "/c/%FF", f"/c/{channel}%2Fx", f"/c/{channel}%2Ft%2Fx", "/c/%"):
        carried = _carried(_page(owner, path))
        assert carried is None or "messages" not in carried, path
