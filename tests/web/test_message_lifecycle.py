"""Messages people can fix and react to (issue 22), in two browsers at once: an edit with the
up-arrow shows "(edited)" elsewhere, deletes (one's own; the owner's of an agent's reply),
reactions and their removal live; and a guest's share of it."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.support import Api, Guest, Server, post, unique
from tests.web.conftest import PHONE, Browse, agent, channel, open_channel
from tests.web.test_accessibility import serious


def row(page: Any, words: str) -> Any:
    return page.get_by_test_id("message-list").locator("article", has_text=words)


def send(page: Any, words: str) -> None:
    page.get_by_role("textbox", name="Message").fill(words)
    page.keyboard.press("Enter")
    expect(row(page, words)).to_have_count(1)
    expect(page.get_by_role("textbox", name="Message")).to_have_value("")


def action(page: Any, words: str, name: str) -> None:
    """Hover the message (its actions show) and press one."""
    message = row(page, words)
    message.hover()
    message.get_by_role("button", name=name, exact=True).click()


def test_up_arrow_edits_the_last_message_and_another_browser_sees_edited(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [])
    writer, reader = browse.page(), browse.page()
    open_channel(writer, web_server, room["id"])
    open_channel(reader, web_server, room["id"])
    send(writer, "the first message")
    send(writer, "helo wrold")
    expect(row(reader, "helo wrold")).to_have_count(1)

    writer.get_by_role("textbox", name="Message").press("ArrowUp")
    editor = writer.get_by_role("textbox", name="Edit message")
    expect(editor).to_be_focused()
    expect(editor).to_have_value("helo wrold")
    # Escape cancels and changes nothing.
    editor.press("Escape")
    expect(editor).to_have_count(0)
    writer.get_by_role("textbox", name="Message").press("ArrowUp")
    editor.fill("hello world")
    editor.press("Enter")
    expect(editor).to_have_count(0)
    expect(writer.get_by_role("textbox", name="Message")).to_be_focused()  # back where it was
    expect(row(writer, "hello world")).to_contain_text("(edited)")

    edited = row(reader, "hello world")
    expect(edited).to_contain_text("(edited)")
    expect(row(reader, "helo wrold")).to_have_count(0)
    edited.get_by_role("button", name="(edited)").click()
    versions = reader.get_by_role("dialog", name="Versions of this message")
    expect(versions).to_contain_text("helo wrold")
    expect(versions).to_contain_text("hello world")
    expect(versions).to_contain_text("As posted")
    reader.keyboard.press("Escape")
    expect(versions).to_have_count(0)
    assert [m["content"] for m in history_of(web_owner, room["id"])] == [
        "the first message",
        "hello world",
    ]


def history_of(api: Api, channel_id: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = api.ok("GET", "/api/messages", params={"channelId": channel_id})[
        "messages"
    ]
    return listed


def test_deletes_own_messages_and_the_owner_deletes_an_agents_reply(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    helper = agent(web_owner, name=unique("Echo"), avatar="📣")
    room = channel(web_owner, [helper])
    owner, other = browse.page(), browse.page()
    open_channel(owner, web_server, room["id"])
    open_channel(other, web_server, room["id"])
    send(owner, "a message to take back")
    fake_model.enqueue(text("an agent's answer to remove"))
    send(owner, f"@{helper['name']} say something")
    expect(row(owner, "an agent's answer to remove")).to_have_attribute("aria-busy", "false")
    expect(row(other, "an agent's answer to remove")).to_have_count(1)

    action(owner, "a message to take back", "Delete")
    confirm = owner.get_by_role("dialog", name="Delete this message?")
    expect(confirm).to_contain_text("cannot be undone")
    confirm.get_by_role("button", name="Cancel").click()
    expect(row(owner, "a message to take back")).to_have_count(1)
    action(owner, "a message to take back", "Delete")
    confirm.get_by_role("button", name="Delete").click()
    expect(row(owner, "a message to take back")).to_have_count(0)
    expect(row(other, "a message to take back")).to_have_count(0)

    # The owner may delete every message, an agent's reply included (no Edit on it).
    reply = row(owner, "an agent's answer to remove")
    reply.hover()
    expect(reply.get_by_role("button", name="Edit", exact=True)).to_have_count(0)
    action(owner, "an agent's answer to remove", "Delete")
    owner.get_by_role("dialog", name="Delete this message?").get_by_role(
        "button", name="Delete"
    ).click()
    expect(row(owner, "an agent's answer to remove")).to_have_count(0)
    expect(row(other, "an agent's answer to remove")).to_have_count(0)
    expect(row(other, "say something")).to_have_count(1)
    assert [m["content"] for m in history_of(web_owner, room["id"])] == [
        f"@{helper['name']} say something"
    ]


def test_reactions_toggle_and_show_live_in_another_browser(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [])
    post(web_owner, room["id"], "react to me")
    one, two = browse.page(), browse.page()
    open_channel(one, web_server, room["id"])
    open_channel(two, web_server, room["id"])

    # By keyboard: focus the message, Tab to its actions, open the picker, pick.
    message = row(one, "react to me")
    message.focus()
    one.keyboard.press("Tab")
    expect(message.get_by_role("button", name="Add a reaction")).to_be_focused()
    one.keyboard.press("Enter")
    picker = one.get_by_role("dialog", name="Add a reaction")
    picker.get_by_role("button", name="React with 🎉").click()
    expect(picker).to_have_count(0)
    chip = message.get_by_role("button", name="🎉 1")
    expect(chip).to_have_attribute("aria-pressed", "true")

    seen = row(two, "react to me").get_by_role("button", name="🎉 1")
    expect(seen).to_have_attribute("aria-pressed", "true")  # the same person, another browser
    expect(seen).to_have_accessible_name("🎉 1: you")
    # The second browser's picker now offers it among the recent ones.
    action(two, "react to me", "Add a reaction")
    expect(two.get_by_role("dialog", name="Add a reaction")).to_be_visible()  # a lazy chunk
    recent = two.get_by_role("dialog", name="Add a reaction").get_by_role("list", name="Recent")
    expect(recent).to_have_count(0)  # recents are per browser: this one has none yet
    two.keyboard.press("Escape")
    action(one, "react to me", "Add a reaction")
    recent = one.get_by_role("dialog", name="Add a reaction").get_by_role("list", name="Recent")
    expect(recent.get_by_role("button", name="React with 🎉")).to_be_visible()
    recent.get_by_role("button", name="React with 🎉").click()  # again: nothing changes

    with Guest(web_server, web_owner) as guest:
        web_owner.ok("PUT", f"/api/channels/{room['id']}", json={"memberIds": [guest.id]})
        message_id = history_of(web_owner, room["id"])[0]["id"]
        guest.api.ok("POST", f"/api/messages/{message_id}/reactions", json={"emoji": "🎉"})
        expect(row(two, "react to me").get_by_role("button", name="🎉 2")).to_be_visible()
        row(two, "react to me").get_by_role("button", name="🎉 2").hover()
        expect(row(two, "react to me")).to_contain_text(f"🎉 you, {guest.user['name']}")

        # Un-react by clicking the chip: both browsers follow.
        row(one, "react to me").get_by_role("button", name="🎉 2").click()
        chip = row(two, "react to me").get_by_role("button", name="🎉 1")
        expect(chip).to_have_attribute("aria-pressed", "false")
        guest.api.ok("DELETE", f"/api/messages/{message_id}/reactions/🎉")
        expect(row(one, "react to me").get_by_role("button", name="🎉", exact=False)).to_have_count(
            0
        )
        expect(row(two, "react to me").locator("ul[aria-label=Reactions]")).to_have_count(0)


def test_a_guest_edits_deletes_and_reacts_its_own_and_no_more(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    with Guest(web_server, web_owner, name=unique("Gia ")) as guest:
        room = channel(web_owner, [], memberIds=[guest.id])
        hidden = channel(web_owner, [])
        secret = post(web_owner, hidden["id"], "owner-only words")
        post(web_owner, room["id"], "the owner's message")
        page = browse.page()
        open_channel(page, web_server, room["id"], password=guest.key)
        owners = browse.page()
        open_channel(owners, web_server, room["id"])

        theirs = row(page, "the owner's message")
        theirs.hover()
        expect(theirs.get_by_role("button", name="Add a reaction")).to_be_visible()
        expect(theirs.get_by_role("button", name="Reply in thread")).to_be_visible()
        expect(theirs.get_by_role("button", name="Edit", exact=True)).to_have_count(0)
        expect(theirs.get_by_role("button", name="Delete", exact=True)).to_have_count(0)
        action(page, "the owner's message", "Add a reaction")
        page.get_by_role("dialog", name="Add a reaction").get_by_role(
            "button", name="React with 👍"
        ).click()
        expect(
            row(owners, "the owner's message").get_by_role("button", name="👍 1")
        ).to_have_attribute("aria-pressed", "false")

        send(page, "a guest's typo")
        page.get_by_role("textbox", name="Message").press("ArrowUp")
        page.get_by_role("textbox", name="Edit message").fill("a guest's fix")
        page.keyboard.press("Enter")
        expect(row(owners, "a guest's fix")).to_contain_text("(edited)")
        action(page, "a guest's fix", "Delete")
        page.get_by_role("dialog", name="Delete this message?").get_by_role(
            "button", name="Delete"
        ).click()
        expect(row(owners, "a guest's fix")).to_have_count(0)

        # In a thread of the owner's message: the guest replies, and fixes its reply there.
        action(page, "the owner's message", "Reply in thread")
        box = page.get_by_role("textbox", name="Reply in thread")
        box.fill("a guest's thread reply")
        box.press("Enter")
        thread = page.get_by_test_id("thread-list")
        expect(thread.locator("article", has_text="a guest's thread reply")).to_have_count(1)
        box.press("ArrowUp")
        page.get_by_role("textbox", name="Edit message").fill("a guest's better reply")
        page.keyboard.press("Enter")
        expect(thread.locator("article", has_text="a guest's better reply")).to_contain_text(
            "(edited)"
        )
        summary = row(owners, "the owner's message").get_by_test_id("thread-summary")
        expect(summary).to_contain_text("1 reply")
        expect(row(owners, "a guest's better reply")).to_have_count(0)

        # Another channel's thread is not the guest's to open, by address either.
        page.goto(f"/c/{hidden['id']}/t/{secret}")
        expect(
            page.get_by_text("This channel does not exist, or you are not a member")
        ).to_be_visible()
        expect(page.get_by_text("owner-only words")).to_have_count(0)
        expect(page.get_by_test_id("thread-panel")).to_have_count(0)


def test_on_a_phone_a_long_press_shows_the_actions_and_dialogs_pass_axe(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [])
    mine = post(web_owner, room["id"], "press and hold me")
    web_owner.ok("PATCH", f"/api/messages/{mine}", json={"content": "press and hold me, edited"})
    page = browse.page()
    open_channel(page, web_server, room["id"])
    page.set_viewport_size(PHONE)
    message = row(page, "press and hold me")
    actions = message.get_by_role("group", name="Message actions")
    expect(actions).to_have_count(0)  # made when the row is first reached, not before
    message.dispatch_event("pointerdown", {"pointerType": "touch", "isPrimary": True})
    page.wait_for_timeout(700)
    expect(actions).to_have_css("opacity", "1")
    actions.get_by_role("button", name="Add a reaction").click()
    picker = page.get_by_role("dialog", name="Add a reaction")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert serious(page) == [], scheme
    picker.get_by_role("button", name="React with 🚀").click()
    expect(message.get_by_role("button", name="🚀 1: you")).to_be_visible()
    # A touch elsewhere hides the actions again (once focus, back on the button the picker
    # was opened from, and the pointer have left the message too).
    box = page.get_by_role("textbox", name="Message")
    box.dispatch_event("pointerdown", {"pointerType": "touch", "isPrimary": True})
    box.focus()
    page.mouse.move(5, 735)
    expect(actions).to_have_css("opacity", "0")

    message.get_by_role("button", name="(edited)").click()
    versions = page.get_by_role("dialog", name="Versions of this message")
    expect(versions).to_contain_text("As posted")
    assert serious(page) == []
    versions.get_by_role("button", name="Close").click()
    # The dialog gives focus back to its opener as it closes: wait for that, or it can land
    # after the focus below (on a loaded machine) and the first Tab starts from the marker.
    expect(versions).to_have_count(0)
    expect(message.get_by_role("button", name="(edited)", exact=True)).to_be_focused()
    # By keyboard, in reading order: the marker, the chip, then each action.
    message.focus()
    for name in ("(edited)", "🚀 1: you", "Add a reaction", "Reply in thread", "Edit", "Delete"):
        page.keyboard.press("Tab")
        expect(message.get_by_role("button", name=name, exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    assert serious(page) == []


def test_up_arrow_reaches_the_last_message_even_when_it_is_scrolled_far_away(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    with Guest(web_server, web_owner) as guest:
        room = channel(web_owner, [], memberIds=[guest.id])
        post(web_owner, room["id"], "my message far back")
        for i in range(80):
            post(guest.api, room["id"], f"chatter {i}\n\nwith a second paragraph")
        page = browse.page()
        open_channel(page, web_server, room["id"])
        expect(row(page, "chatter 79")).to_be_visible()
        expect(row(page, "my message far back")).to_have_count(0)  # not rendered
        page.get_by_role("textbox", name="Message").press("ArrowUp")
        editor = page.get_by_role("textbox", name="Edit message")
        expect(editor).to_be_focused()
        expect(editor).to_have_value("my message far back")
        expect(editor).to_be_in_viewport()
        editor.fill("my message far back, fixed")
        editor.press("Enter")
        expect(row(page, "my message far back, fixed")).to_contain_text("(edited)")
