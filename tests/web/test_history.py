"""A long channel: opened at the bottom, paged back without jumps, virtualized, and the bottom
kept (or a "new messages" pill shown) as messages arrive."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support import Api, Server, post
from tests.web.conftest import Browse, channel, open_channel

COUNT = 320


@pytest.fixture(scope="module")
def long_channel(web_owner: Api) -> dict[str, Any]:
    room = channel(web_owner, [], name="zz-long")
    for i in range(1, COUNT + 1):
        body = f"message {i}" + ("\n\nwith a second paragraph" if i % 7 == 0 else "")
        post(web_owner, room["id"], body)
    return room


def rows(page: Any) -> int:
    return int(page.locator("[data-testid=message-list] article").count())


def at_bottom(page: Any) -> bool:
    return bool(
        page.get_by_test_id("message-list").evaluate(
            "el => el.scrollHeight - el.scrollTop - el.clientHeight < 4"
        )
    )


def wait_at_bottom(page: Any) -> None:
    page.wait_for_function(
        "() => { const el = document.querySelector('[data-testid=message-list]');"
        " return el.scrollHeight - el.scrollTop - el.clientHeight < 4; }",
        timeout=3000,
    )


def wait_still(page: Any) -> None:
    """Until the list has stopped moving: the same scroll position for ten frames."""
    page.evaluate(
        """() => new Promise(done => {
            const el = document.querySelector('[data-testid=message-list]');
            let last = el.scrollTop, same = 0;
            const look = () => {
                same = el.scrollTop === last ? same + 1 : 0;
                last = el.scrollTop;
                if (same >= 10) done(); else requestAnimationFrame(look);
            };
            requestAnimationFrame(look);
        })"""
    )


def test_scrolling_back_pages_older_messages_in_without_a_jump_and_keeps_the_dom_small(
    browse: Browse, web_server: Server, long_channel: dict[str, Any]
) -> None:
    page = browse.page()
    open_channel(page, web_server, long_channel["id"])
    expect(page.locator("article", has_text=f"message {COUNT}")).to_be_visible()
    wait_at_bottom(page)
    seen: set[str] = set()
    for _ in range(40):
        anchor = page.get_by_test_id("message-list").evaluate(
            """el => {
                el.scrollTop = Math.max(0, el.scrollTop - 700);
                const box = el.getBoundingClientRect();
                const first = [...el.querySelectorAll('article')]
                    .find(a => a.getBoundingClientRect().bottom > box.top + 1);
                return {id: first.dataset.messageId, top: first.getBoundingClientRect().top};
            }"""
        )
        page.wait_for_function(
            "() => !document.querySelector('[data-testid=message-list]')"
            ".getAttribute('aria-busy').startsWith('t')"
        )
        wait_still(page)
        moved = page.evaluate(
            "id => document.querySelector(`[data-message-id='${id}']`).getBoundingClientRect().top",
            anchor["id"],
        )
        # A page coming in above, and rows measured at other heights than their estimate,
        # move the view by exactly what they add: what the reader sees stays put.
        assert abs(moved - anchor["top"]) <= 1, (anchor, moved)
        assert rows(page) < 150
        seen.update(page.eval_on_selector_all("article", "els => els.map(e => e.textContent)"))
        # Pages are fetched well ahead (and larger for a fast scroll), so the whole channel
        # may be in long before the view gets to its top: stop at the top itself.
        if page.get_by_test_id("message-list").evaluate("el => el.scrollTop") == 0:
            break
    expect(page.locator("article", has_text="message 1").first).to_be_visible()
    ids = page.eval_on_selector_all("article", "els => els.map(e => e.dataset.messageId)")
    assert len(ids) == len(set(ids)), "no message shows twice"
    assert any("message 2" in text for text in seen)
    assert rows(page) < 150


def test_the_view_follows_new_messages_at_the_bottom_and_offers_a_pill_when_scrolled_up(
    browse: Browse, web_server: Server, web_owner: Api, long_channel: dict[str, Any]
) -> None:
    page = browse.page()
    open_channel(page, web_server, long_channel["id"])
    expect(page.locator("article").last).to_contain_text("message")
    post(web_owner, long_channel["id"], "arrives while at the bottom")
    expect(page.locator("article", has_text="arrives while at the bottom")).to_be_in_viewport()
    wait_at_bottom(page)

    page.get_by_test_id("message-list").evaluate("el => el.scrollTop = el.scrollTop - 600")
    # The scroll event is handled on a later frame: post only once the view knows it left
    # the bottom, or a loaded machine can deliver the message first.
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    assert not at_bottom(page)
    post(web_owner, long_channel["id"], "arrives while reading older ones")
    pill = page.get_by_role("button", name="1 new message")
    expect(pill).to_be_visible()
    assert not at_bottom(page), "the view does not jump away from what is being read"
    pill.click()
    expect(page.locator("article", has_text="arrives while reading older ones")).to_be_in_viewport()
    expect(pill).to_be_hidden()
