"""The search box (issue 23): operators with hints, results by channel, a jump to a message
far back in a long channel that then reads down to the live end, a guest's search, the
server's error for a bad query, keyboard-only use, axe, and the screenshots."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support import Api, Guest, Server, post, unique
from tests.web.conftest import DESKTOP, PHONE, Browse, Shot, channel, configure, open_channel
from tests.web.test_accessibility import serious

COUNT = 300


@pytest.fixture(scope="module")
def long_room(web_server: Server, web_owner: Api) -> Any:
    """300 messages; the third, by a guest, holds a word found nowhere else."""
    with Guest(web_server, web_owner, name=unique("Quill")) as quill:
        room = channel(web_owner, [], name=unique("zz-search-"), memberIds=[quill.id])
        word = unique("zebracorn")
        for i in range(1, COUNT + 1):
            if i == 3:
                post(quill.api, room["id"], f"The {word} plan is in the shared folder")
            else:
                post(web_owner, room["id"], f"line {i}")
        yield {"room": room, "word": word, "author": quill.user["name"]}


def open_search(page: Any) -> Any:
    page.keyboard.press("Control+k")
    box = page.get_by_role("combobox", name="Search messages")
    expect(box).to_be_focused()
    return box


def article(page: Any, text: str) -> Any:
    return page.get_by_test_id("message-list").locator("article", has_text=text)


def test_a_from_search_jumps_far_back_and_reads_down_to_the_live_end(
    browse: Browse, web_server: Server, web_owner: Api, long_room: Any
) -> None:
    room, word, author = long_room["room"], long_room["word"], long_room["author"]
    page = browse.page()
    open_channel(page, web_server, room["id"])
    expect(article(page, f"line {COUNT}")).to_be_visible()

    box = open_search(page)
    # The empty box lists the operators.
    hints = page.get_by_role("listbox", name="Suggestions")
    expect(hints.get_by_role("option")).to_have_count(10)
    expect(hints).to_contain_text("from:@")
    expect(hints).to_contain_text("has:file")
    box.type(f"from:@{author[:6]}")
    suggestion = hints.get_by_role("option", name=re.compile(re.escape(author)))
    expect(suggestion).to_be_visible()
    expect(suggestion).to_contain_text("person")
    box.press("Enter")
    expect(box).to_have_value(f"from:@{author} ")
    box.type(word)
    results = page.get_by_role("listbox", name="Results")
    hit = results.get_by_test_id("search-result")
    expect(hit).to_have_count(1)
    expect(results.get_by_role("group", name=f"#{room['name']}")).to_be_visible()
    expect(hit).to_contain_text(author)
    expect(hit.locator("mark")).to_have_text(word)
    hit.click()

    expect(page.get_by_test_id("search-dialog")).to_have_count(0)
    target = article(page, word)
    expect(target).to_be_visible()
    expect(target).to_be_in_viewport()
    expect(page.locator(".row.flash")).to_have_count(1)
    expect(page.locator(".row.flash")).to_contain_text(word)
    expect(target).to_be_focused()
    # A window around it, not the whole channel, and not the live end yet.
    expect(article(page, f"line {COUNT}")).to_have_count(0)
    latest = page.get_by_role("button", name="Jump to the newest messages")
    expect(latest).to_be_visible()
    # The flash fades (it goes after a few seconds).
    expect(page.locator(".row.flash")).to_have_count(0, timeout=6000)

    # Scrolling down pages newer messages in until the live end.
    feed = page.get_by_test_id("message-list")
    for _ in range(60):
        feed.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_timeout(120)
        if article(page, f"line {COUNT}").count() and not latest.count():
            break
    expect(article(page, f"line {COUNT}")).to_be_visible()
    expect(latest).to_have_count(0)
    feed.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_timeout(200)

    # Live again: a new message shows at the bottom, once.
    fresh = unique("live-after-jump-")
    post(web_owner, room["id"], fresh)
    expect(article(page, fresh)).to_have_count(1)
    expect(article(page, fresh)).to_be_in_viewport()
    page.wait_for_timeout(500)
    expect(article(page, fresh)).to_have_count(1)
    # Every message is there once, in order, from the hit to the newest.
    texts = feed.locator("article").all_inner_texts()
    assert len(texts) == len(set(texts))


def test_a_guest_finds_only_its_own_channels(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    word = unique("gueststar")
    with Guest(web_server, web_owner, name=unique("Gwen ")) as guest:
        mine = channel(web_owner, [], name=unique("ac-mine-"), memberIds=[guest.id])
        hidden = channel(web_owner, [], name=unique("ac-hidden-"))
        post(web_owner, mine["id"], f"{word} in the guest's channel")
        post(web_owner, hidden["id"], f"{word} in a channel the guest is not in")
        page = browse.page()
        open_channel(page, web_server, mine["id"], password=guest.key)
        box = open_search(page)
        box.fill("in:#ac-")
        hints = page.get_by_role("listbox", name="Suggestions")
        expect(hints).to_contain_text(mine["name"])
        expect(hints).not_to_contain_text(hidden["name"])
        box.fill(word)
        hits = page.get_by_test_id("search-result")
        expect(hits).to_have_count(1)
        expect(hits).to_contain_text("in the guest's channel")
        dialog = page.get_by_test_id("search-dialog")
        expect(dialog).not_to_contain_text(hidden["name"])
        expect(dialog).not_to_contain_text("not in")
        # Asked by name, the hidden channel finds nothing (and is no error).
        box.fill(f"in:#{hidden['name']} {word}")
        box.press("Enter")
        expect(dialog.get_by_role("status")).to_contain_text("No messages match")
        expect(hits).to_have_count(0)


def test_a_bad_query_shows_the_servers_error_beside_the_box(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [], name=unique("ac-errors-"))
    post(web_owner, room["id"], "something to find")
    page = browse.page()
    open_channel(page, web_server, room["id"])
    box = open_search(page)
    box.fill("has:banana")
    box.press("Enter")
    error = page.get_by_test_id("search-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("has:")
    expect(box).to_have_attribute("aria-invalid", "true")
    # The box still works: a good query clears the error and finds.
    box.fill("something")
    box.press("Enter")
    expect(error).to_have_count(0)
    expect(page.get_by_test_id("search-result").first).to_be_visible()
    box.fill('"unbalanced')
    box.press("Enter")
    expect(error).to_contain_text('"')


def test_keyboard_only_search_opens_a_reply_in_its_thread(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [], name=unique("ac-keys-"))
    word = unique("keyword")
    root = post(web_owner, room["id"], "a question to thread on")
    for i in range(30):
        post(web_owner, room["id"], f"chatter {i}")
    for i in range(60):
        post(web_owner, room["id"], f"reply {i}", threadId=root)
    post(web_owner, room["id"], f"the {word} answer", threadId=root)
    post(web_owner, room["id"], f"{word} in the main timeline")
    page = browse.page()
    open_channel(page, web_server, room["id"])
    page.get_by_test_id("message-list").focus()
    page.keyboard.press("/")
    box = page.get_by_role("combobox", name="Search messages")
    expect(box).to_be_focused()
    # Escape closes, and focus goes back where it was.
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("search-dialog")).to_have_count(0)
    expect(page.get_by_test_id("message-list")).to_be_focused()
    page.keyboard.press("/")
    expect(box).to_be_focused()
    page.keyboard.type(f"{word} is:thread")
    page.keyboard.press("Enter")
    hits = page.get_by_test_id("search-result")
    expect(hits).to_have_count(1)
    expect(hits).to_contain_text("in a thread")
    page.keyboard.press("ArrowDown")
    expect(box).to_have_attribute("aria-activedescendant", re.compile(r".+-0$"))
    expect(hits.first).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/c/{room['id']}/t/{root}")
    panel = page.get_by_test_id("thread-panel")
    reply = panel.locator("article", has_text=f"the {word} answer")
    expect(reply).to_be_visible()
    expect(panel.locator(".row.flash")).to_contain_text(word)
    # Sort and arrows: both results, newest first, the second opened in the channel.
    page.keyboard.press("Control+k")
    expect(box).to_be_focused()
    page.keyboard.press("Control+a")
    page.keyboard.type(word)
    page.keyboard.press("Enter")
    expect(hits).to_have_count(2)
    page.get_by_role("button", name="Newest").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Newest")).to_have_attribute("aria-pressed", "true")
    box.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(hits.nth(1)).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowUp")
    expect(hits.nth(0)).to_have_attribute("aria-selected", "true")
    expect(hits.nth(0)).to_contain_text("main timeline")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/c/{room['id']}")
    expect(page.get_by_test_id("message-list").locator(".row.flash")).to_contain_text(word)


def test_more_results_page_on_with_the_cursor(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [], name=unique("ac-more-"))
    word = unique("manyhits")
    for i in range(25):
        post(web_owner, room["id"], f"{word} number {i}")
    page = browse.page()
    open_channel(page, web_server, room["id"])
    box = open_search(page)
    box.fill(word)
    hits = page.get_by_test_id("search-result")
    expect(hits).to_have_count(20)
    page.get_by_role("button", name="More results").click()
    expect(hits).to_have_count(25)
    expect(page.get_by_role("button", name="More results")).to_have_count(0)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_search_dialog_has_no_serious_violation(
    browse: Browse, web_server: Server, web_owner: Api, scheme: str
) -> None:
    room = channel(web_owner, [], name=unique("ac-axe-"))
    word = unique("axeword")
    post(web_owner, room["id"], f"the {word} & <friends> in a message")
    for viewport in (DESKTOP, PHONE):
        page = browse.page(color_scheme=scheme)
        open_channel(page, web_server, room["id"])
        page.set_viewport_size(viewport)
        page.get_by_test_id("message-list").focus()
        page.keyboard.press("/")
        expect(page.get_by_role("option").first).to_be_visible()
        assert serious(page) == []
        page.keyboard.type(word)
        expect(page.get_by_test_id("search-result")).to_have_count(1)
        expect(page.get_by_test_id("search-result")).to_contain_text("& <friends>")
        page.keyboard.press("ArrowDown")
        assert serious(page) == []


def test_screenshots_of_the_search_results(
    browse: Browse, fresh_server: Server, fake_model: Any, searxng: Any, shoot: Shot
) -> None:
    """On a server of its own, so that the sidebar holds only this scene's channels."""
    fresh_server.start()
    owner = fresh_server.login()
    configure(owner, fake_model, searxng)
    with Guest(fresh_server, owner, name="Maya") as maya:
        launch = channel(owner, [], name="launch-plan", memberIds=[maya.id])
        general = channel(owner, [], name="general", memberIds=[maya.id])
        post(owner, general["id"], "Welcome! Release notes go in #launch-plan.")
        post(
            maya.api,
            launch["id"],
            "Draft of the release notes is up; the budget table is at the end.",
        )
        post(owner, launch["id"], "Thanks. Can we move the release to Friday?")
        post(maya.api, general["id"], "Reminder: the release party budget needs a sign-off.")
        post(owner, launch["id"], "Release checklist: docs, screenshots, changelog, budget.")
        page = browse.page(server=fresh_server)
        open_channel(page, fresh_server, launch["id"])
        box = open_search(page)
        box.fill("release budget")
        expect(page.get_by_test_id("search-result")).to_have_count(3)
        page.keyboard.press("ArrowDown")
        page.mouse.move(0, 0)
        page.evaluate("document.fonts.ready")
        page.wait_for_timeout(200)
        shoot(page, "search-desktop-light")
        page.emulate_media(color_scheme="dark")
        page.wait_for_timeout(150)
        shoot(page, "search-desktop-dark")
        page.set_viewport_size(PHONE)
        page.wait_for_timeout(200)
        shoot(page, "search-phone-dark")
        page.emulate_media(color_scheme="light")
        page.wait_for_timeout(150)
        shoot(page, "search-phone-light")
    owner.close()
