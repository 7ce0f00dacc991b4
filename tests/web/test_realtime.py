"""Realtime over real networks: the server restarts under an open page, which says it is
reconnecting, comes back by itself, and shows what it missed, once each."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.support import Server, post
from tests.web.conftest import Browse, channel, open_channel


def restart_on_the_same_port(server: Server) -> None:
    server.stop()
    server.start(port=server.port)


def test_after_a_server_restart_the_page_reconnects_with_no_gap_and_no_duplicate(
    browse: Browse, fresh_server: Server
) -> None:
    fresh_server.start()
    owner = fresh_server.login()
    room = channel(owner, [])
    post(owner, room["id"], "before the restart")
    page = browse.page(server=fresh_server)
    open_channel(page, fresh_server, room["id"])
    expect(page.locator("article", has_text="before the restart")).to_have_count(1)

    owner.close()
    fresh_server.stop()
    expect(page.get_by_test_id("reconnecting")).to_be_visible()
    expect(page.get_by_test_id("reconnecting")).to_contain_text("Reconnecting")
    fresh_server.start(port=fresh_server.port)
    owner = fresh_server.login()
    for i in range(3):
        post(owner, room["id"], f"while the page was away {i}")
    expect(page.get_by_test_id("reconnecting")).to_be_hidden(timeout=20_000)
    post(owner, room["id"], "after the reconnect")
    expect(page.locator("article", has_text="after the reconnect")).to_have_count(1)
    for text in ("before the restart", *(f"while the page was away {i}" for i in range(3))):
        expect(page.locator("article", has_text=text)).to_have_count(1)
    ids = page.eval_on_selector_all("article", "els => els.map(e => e.dataset.messageId)")
    assert len(ids) == len(set(ids)) == 5
    owner.close()


def test_a_second_restart_while_reconnecting_is_survived(
    browse: Browse, fresh_server: Server
) -> None:
    fresh_server.start()
    with fresh_server.login() as owner:
        room = channel(owner, [])
    page = browse.page(server=fresh_server)
    open_channel(page, fresh_server, room["id"])
    restart_on_the_same_port(fresh_server)
    restart_on_the_same_port(fresh_server)
    expect(page.get_by_test_id("reconnecting")).to_be_hidden(timeout=20_000)
    page.get_by_role("textbox", name="Message").fill("still here")
    page.keyboard.press("Enter")
    expect(page.locator("article", has_text="still here")).to_have_count(1)
    with fresh_server.login() as owner:
        listed: list[dict[str, Any]] = owner.ok(
            "GET", "/api/messages", params={"channelId": room["id"]}
        )["messages"]
    assert [m["content"] for m in listed] == ["still here"]
