"""The message feed and the shell by keyboard: focus kept on a row scrolled far away, each
channel's place remembered, and the phone drawer that takes focus and gives it back."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support import Api, Server, post, unique
from tests.web.conftest import PHONE, Browse, channel, open_channel

COUNT = 150


@pytest.fixture(scope="module")
def feed_channel(web_owner: Api) -> dict[str, Any]:
    room = channel(web_owner, [], name=unique("af-feed-"))
    for i in range(1, COUNT + 1):
        post(web_owner, room["id"], f"row {i}" + ("\n\nand more" if i % 5 == 0 else ""))
    return room


def scroll_by(page: Any, dy: int) -> None:
    page.get_by_test_id("message-list").evaluate(f"el => el.scrollTop = el.scrollTop + ({dy})")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def first_in_view(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.get_by_test_id("message-list").evaluate(
        """el => {
            const box = el.getBoundingClientRect();
            const first = [...el.querySelectorAll('article')]
                .find(a => a.getBoundingClientRect().bottom > box.top + 1);
            return {id: first.dataset.messageId, top: first.getBoundingClientRect().top - box.top};
        }"""
    )
    return found


def test_a_focused_row_keeps_focus_while_the_feed_scrolls_far_from_it(
    browse: Browse, web_server: Server, feed_channel: dict[str, Any]
) -> None:
    page = browse.page()
    open_channel(page, web_server, feed_channel["id"])
    last = page.locator("article", has_text=f"row {COUNT}")
    expect(last).to_be_in_viewport()
    last.focus()
    expect(last).to_be_focused()
    # Page Up moves to the message before it (the feed pattern).
    page.keyboard.press("PageUp")
    expect(page.locator("article", has_text=f"row {COUNT - 1}")).to_be_focused()
    focused_id = page.evaluate("document.activeElement.dataset.messageId")
    for _ in range(12):
        scroll_by(page, -1500)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=message-list]').scrollTop < 50"
    )
    # Far away and out of the rendered range, the focused row is still there, still focused.
    assert page.evaluate("document.activeElement.dataset.messageId") == focused_id
    assert page.locator("article").count() < 120
    page.keyboard.press("PageDown")
    expect(page.locator("article", has_text=f"row {COUNT}")).to_be_focused()


def test_a_flick_shows_placeholders_that_become_rows_once_it_stops(
    browse: Browse, web_server: Server, feed_channel: dict[str, Any]
) -> None:
    page = browse.page()
    open_channel(page, web_server, feed_channel["id"])
    expect(page.locator("article", has_text=f"row {COUNT}")).to_be_in_viewport()
    # Steps of 600 px a frame: a flick. The rows it brings in are boxes, not messages. The steps
    # and the looks run in the page: a round trip to the test between frames can take long
    # enough on a loaded machine for the steps to be a reader's scroll, not a flick.
    seen = page.get_by_test_id("message-list").evaluate(
        """async el => {
            const frame = () => new Promise(r => requestAnimationFrame(r));
            await frame();
            let most = {count: 0, heights: [], inside: 0};
            for (let i = 0; i < 6; i++) {
                el.scrollTop = el.scrollTop - 600;
                await frame();
                const boxes = [...el.querySelectorAll('.row.placeholder')];
                if (boxes.length > most.count) most = {
                    count: boxes.length,
                    heights: boxes.map(r => r.getBoundingClientRect().height),
                    inside: el.querySelectorAll('.row.placeholder article').length,
                };
            }
            return most;
        }"""
    )
    assert seen["count"] > 0
    assert all(h > 0 for h in seen["heights"])
    assert seen["inside"] == 0
    # Once it settles, every placeholder becomes its message, and the view is covered by rows.
    page.wait_for_function("() => !document.querySelector('.row.placeholder')")
    covered = page.get_by_test_id("message-list").evaluate(
        """el => {
            const box = el.getBoundingClientRect();
            const rows = [...el.querySelectorAll('article')].map(a => a.getBoundingClientRect())
                .filter(r => r.bottom > box.top && r.top < box.bottom);
            return rows.length > 3 && rows[0].top <= box.top + 80
                && rows[rows.length - 1].bottom >= box.bottom - 80;
        }"""
    )
    assert covered
    # A slow scroll (a reader's) brings rows in as messages.
    page.get_by_test_id("message-list").evaluate("el => el.scrollTop = el.scrollTop + 40")
    page.wait_for_timeout(250)
    for _ in range(5):
        scroll_by(page, 30)
        page.wait_for_timeout(60)
        assert page.locator(".row.placeholder").count() == 0


def test_coming_back_to_a_channel_lands_where_it_was_read(
    browse: Browse, web_server: Server, web_owner: Api, feed_channel: dict[str, Any]
) -> None:
    other = channel(web_owner, [], name=unique("af-other-"))
    post(web_owner, other["id"], "elsewhere")
    page = browse.page()
    open_channel(page, web_server, feed_channel["id"])
    expect(page.locator("article", has_text=f"row {COUNT}")).to_be_in_viewport()
    for _ in range(3):
        scroll_by(page, -700)
    page.wait_for_timeout(300)
    before = first_in_view(page)
    page.get_by_role("link", name=other["name"]).click()
    expect(page.locator("article", has_text="elsewhere")).to_be_visible()
    page.get_by_role("link", name=feed_channel["name"]).click()
    page.locator("[data-testid=message-list][aria-busy=false]").wait_for()
    page.wait_for_timeout(300)
    after = first_in_view(page)
    assert after["id"] == before["id"]
    # Within the rounding of a scroll position to whole pixels.
    assert abs(after["top"] - before["top"]) <= 2, (before, after)
    # Read to the bottom, a channel opens at the bottom again.
    page.get_by_test_id("message-list").evaluate("el => el.scrollTop = el.scrollHeight")
    page.wait_for_timeout(200)
    page.get_by_role("link", name=other["name"]).click()
    page.get_by_role("link", name=feed_channel["name"]).click()
    expect(page.locator("article", has_text=f"row {COUNT}")).to_be_in_viewport()


def test_the_phone_drawer_by_keyboard_takes_focus_traps_it_and_gives_it_back(
    browse: Browse, web_server: Server, feed_channel: dict[str, Any]
) -> None:
    page = browse.page()
    open_channel(page, web_server, feed_channel["id"])
    page.set_viewport_size(PHONE)
    menu = page.get_by_role("button", name="Open the channel list")
    menu.focus()
    page.keyboard.press("Enter")
    close = page.get_by_role("button", name="Close the channel list")
    expect(close).to_be_focused()
    # The page behind is inert: out of the tab order and the accessibility tree.
    assert page.locator("main").evaluate("el => el.inert")
    for _ in range(40):
        page.keyboard.press("Tab")
        inside = page.evaluate("() => !!document.activeElement.closest('nav[aria-label=Channels]')")
        assert inside, page.evaluate("document.activeElement.outerHTML.slice(0, 120)")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("() => !!document.activeElement.closest('nav')")
    page.keyboard.press("Escape")
    expect(menu).to_be_focused()
    assert not page.locator("main").evaluate("el => el.inert")
    expect(page.get_by_role("navigation", name="Channels")).to_be_hidden()


def test_the_focus_ring_is_an_outline_that_forced_colours_keep_and_motion_is_reduced(
    browse: Browse, web_server: Server, feed_channel: dict[str, Any], shoot: Any
) -> None:
    page = browse.page()
    open_channel(page, web_server, feed_channel["id"])
    last = page.locator("article", has_text=f"row {COUNT}")
    page.get_by_role("textbox", name="Message").focus()
    page.keyboard.press("Shift+Tab")
    while page.evaluate("document.activeElement.tagName") != "ARTICLE":
        page.keyboard.press("Shift+Tab")
    expect(last).to_be_focused()
    ring = "el => { const s = getComputedStyle(el); return [s.outlineStyle, s.outlineWidth]; }"
    assert last.evaluate(ring) == ["solid", "2px"]
    shoot(page, "feed-focus-desktop-light")
    page.emulate_media(forced_colors="active")
    assert last.evaluate(ring) == ["solid", "2px"]
    assert last.evaluate("el => getComputedStyle(el).boxShadow") == "none"
    page.emulate_media(forced_colors="none")
    # The browser context asks for reduced motion: nothing transitions or blinks.
    nav = page.get_by_role("navigation", name="Channels")
    assert nav.evaluate("el => getComputedStyle(el).transitionProperty") in ("none", "all")
    assert nav.evaluate("el => getComputedStyle(el).transitionDuration") == "0s"
