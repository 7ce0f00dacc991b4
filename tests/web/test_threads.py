"""Threads in the browser (issue 22): a thread opens beside the channel (the whole view on a
phone), an agent mentioned there answers there, streamed with its tool card, while the channel
shows only the root with its reply count; a reconnect leaves the open thread with no gap and
no duplicate; axe finds nothing serious; the screenshots of it all."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import stall, text, tool_call, tool_calls
from tests.support import Api, Guest, Server, post, unique
from tests.web.conftest import (
    DESKTOP,
    PHONE,
    Browse,
    Shot,
    agent,
    channel,
    open_channel,
)
from tests.web.test_accessibility import serious


def in_channel(page: Any, words: str) -> Any:
    return page.get_by_test_id("message-list").locator("article", has_text=words)


def in_thread(page: Any, words: str) -> Any:
    return page.get_by_test_id("thread-list").locator("article", has_text=words)


def open_thread(page: Any, words: str) -> None:
    root = in_channel(page, words)
    root.hover()
    root.get_by_role("button", name="Reply in thread").click()
    expect(page.get_by_test_id("thread-panel")).to_be_visible()
    expect(page.get_by_role("textbox", name="Reply in thread")).to_be_focused()


def test_an_agent_answers_in_the_thread_while_the_channel_shows_the_reply_count(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    scout = agent(web_owner, name=unique("Scout"), avatar="🔎", tools=["web_search"])
    room = channel(web_owner, [scout])
    post(web_owner, room["id"], "Where should the offsite be?")
    page, watcher = browse.page(), browse.page()
    open_channel(page, web_server, room["id"])
    open_channel(watcher, web_server, room["id"])
    open_thread(page, "Where should the offsite be?")
    assert page.url.startswith(f"{web_server.base_url}/c/{room['id']}/t/msg_")

    fake_model.enqueue(
        tool_calls(tool_call("web_search", {"query": "offsite venues"})),
        stall(text("Lisbon ", "looks ", "good."), after=2),
    )
    box = page.get_by_role("textbox", name="Reply in thread")
    box.fill(f"@{scout['name'][:3]}")
    expect(page.get_by_role("listbox", name="Agents")).to_be_visible()
    box.press("Enter")
    expect(box).to_have_value(f"@{scout['name']} ")
    box.press_sequentially("any ideas?")
    box.press("Enter")
    expect(in_thread(page, "any ideas?")).to_have_count(1)

    reply = in_thread(page, "Lisbon")
    expect(reply).to_have_attribute("aria-busy", "true")
    expect(reply.get_by_test_id("tool-card")).to_contain_text("web_search")
    # The channel shows neither the question nor the reply streaming, only the root's count.
    expect(in_channel(page, "Lisbon")).to_have_count(0)
    expect(in_channel(page, "any ideas?")).to_have_count(0)
    expect(in_channel(watcher, "any ideas?")).to_have_count(0)
    summary = in_channel(watcher, "Where should the offsite be?").get_by_test_id("thread-summary")
    expect(summary).to_contain_text("1 reply")

    fake_model.release()
    expect(reply).to_have_attribute("aria-busy", "false")
    expect(reply).to_contain_text("Lisbon looks good.")
    expect(summary).to_contain_text("2 replies")
    expect(summary).to_contain_text("last just now")
    expect(in_channel(watcher, "Lisbon")).to_have_count(0)
    assert watcher.get_by_test_id("message-list").locator("article").count() == 1

    # The watcher opens it from the summary and finds it all there, once.
    summary.click()
    expect(in_thread(watcher, "Lisbon looks good.")).to_have_count(1)
    expect(in_thread(watcher, "any ideas?")).to_have_count(1)
    expect(in_thread(watcher, "Where should the offsite be?")).to_have_count(1)
    watcher.get_by_role("button", name="Close the thread").click()
    expect(watcher.get_by_test_id("thread-panel")).to_have_count(0)
    expect(watcher).to_have_url(f"{web_server.base_url}/c/{room['id']}")

    # Up in the thread's empty box edits the person's last reply there.
    box.press("ArrowUp")
    editor = page.get_by_test_id("thread-panel").get_by_role("textbox", name="Edit message")
    expect(editor).to_have_value(f"@{scout['name']} any ideas?")
    editor.press("Escape")


def test_a_chain_started_in_a_thread_runs_and_shows_in_the_thread(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    first = agent(web_owner, name=unique("Ada"), avatar="🧮")
    second = agent(web_owner, name=unique("Bea"), avatar="🐝")
    room = channel(web_owner, [first, second])
    root = post(web_owner, room["id"], "a plan to review")
    fake_model.enqueue(stall(text("step one", " done"), after=1), text("step two done"))
    page = browse.page()
    open_channel(page, web_server, room["id"])
    page.goto(f"/c/{room['id']}/t/{root}")
    box = page.get_by_role("textbox", name="Reply in thread")
    box.fill(f"@{first['name']} @{second['name']} review it together")
    box.press("Enter")
    panel = page.get_by_test_id("thread-panel")
    strip = panel.get_by_test_id("chain-strip")
    expect(strip).to_contain_text("Step 1 of 2")
    expect(in_thread(page, "step one")).to_have_attribute("aria-busy", "true")
    fake_model.release()
    expect(in_thread(page, "step two done")).to_have_attribute("aria-busy", "false")
    expect(in_thread(page, "step one done")).to_have_count(1)
    expect(page.get_by_test_id("chain-strip")).to_have_count(1)
    expect(page.get_by_test_id("message-list").locator("article")).to_have_count(1)
    expect(in_channel(page, "a plan to review").get_by_test_id("thread-summary")).to_contain_text(
        "3 replies"
    )


def test_an_open_thread_survives_a_reconnect_with_no_gap_and_no_duplicate(
    browse: Browse, fresh_server: Server
) -> None:
    fresh_server.start()
    owner = fresh_server.login()
    room = channel(owner, [])
    root = post(owner, room["id"], "the root")
    post(owner, room["id"], "first reply", threadId=root)
    page = browse.page(server=fresh_server)
    open_channel(page, fresh_server, room["id"])
    page.goto(f"/c/{room['id']}/t/{root}")
    page.locator("[data-testid=thread-list][aria-busy=false]").wait_for()
    expect(in_thread(page, "first reply")).to_have_count(1)

    owner.close()
    fresh_server.stop()
    expect(page.get_by_test_id("reconnecting")).to_be_visible()
    fresh_server.start(port=fresh_server.port)
    owner = fresh_server.login()
    for i in range(3):
        post(owner, room["id"], f"missed reply {i}", threadId=root)
    expect(page.get_by_test_id("reconnecting")).to_be_hidden(timeout=20_000)
    post(owner, room["id"], "live reply", threadId=root)
    expect(in_thread(page, "live reply")).to_have_count(1)
    for words in ("first reply", "missed reply 0", "missed reply 1", "missed reply 2"):
        expect(in_thread(page, words)).to_have_count(1)
    ids = page.eval_on_selector_all(
        "[data-testid=thread-list] article", "els => els.map(e => e.dataset.messageId)"
    )
    assert len(ids) == len(set(ids)) == 6
    expect(in_channel(page, "the root").get_by_test_id("thread-summary")).to_contain_text(
        "5 replies"
    )
    expect(page.get_by_test_id("message-list").locator("article")).to_have_count(1)
    owner.close()


def test_a_deleted_root_stays_as_a_tombstone_while_its_thread_has_replies(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [])
    root = post(web_owner, room["id"], "a root to delete")
    reply = post(web_owner, room["id"], "a reply that stays", threadId=root)
    page = browse.page()
    open_channel(page, web_server, room["id"])
    page.goto(f"/c/{room['id']}/t/{root}")
    expect(in_thread(page, "a reply that stays")).to_have_count(1)
    web_owner.ok("DELETE", f"/api/messages/{root}")
    tombstone = page.get_by_test_id("message-list").locator(f"[data-message-id='{root}']")
    expect(tombstone).to_contain_text("This message was deleted.")
    expect(page.get_by_text("a root to delete")).to_have_count(0)
    web_owner.ok("DELETE", f"/api/messages/{reply}")
    expect(tombstone).to_have_count(0)
    expect(page.get_by_test_id("thread-panel")).to_contain_text("first message was deleted")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_thread_with_reactions_and_an_edit_has_no_serious_violation(
    browse: Browse,
    web_server: Server,
    web_owner: Api,
    fake_model: FakeOpenAI,
    shoot: Shot,
    size: str,
) -> None:
    planner = agent(web_owner, name=unique("Planner"), avatar="🗺️", tools=["web_search"])
    guest = Guest(web_server, web_owner, name="Mina")
    room = channel(web_owner, [planner], name=unique("offsite-"), memberIds=[guest.id])
    post(web_owner, room["id"], "Morning all. Kicking off the offsite planning today.")
    root = post(web_owner, room["id"], "Where should the offsite be? Budget is modest.")
    web_owner.ok("POST", f"/api/messages/{root}/reactions", json={"emoji": "👀"})
    guest.api.ok("POST", f"/api/messages/{root}/reactions", json={"emoji": "👀"})
    guest.api.ok("POST", f"/api/messages/{root}/reactions", json={"emoji": "🎉"})
    web_owner.ok("POST", f"/api/messages/{root}/reactions", json={"emoji": "👍"})
    post(guest.api, room["id"], "Somewhere reachable by train, please", threadId=root)
    guest.close()
    edited = post(web_owner, room["id"], "I can book the train for Thursday", threadId=root)
    web_owner.ok(
        "PATCH", f"/api/messages/{edited}", json={"content": "I can book the train for Friday"}
    )
    web_owner.ok("POST", f"/api/messages/{edited}/reactions", json={"emoji": "🙏"})
    page = browse.page()
    open_channel(page, web_server, room["id"])
    page.set_viewport_size(DESKTOP if size == "desktop" else PHONE)
    page.goto(f"/c/{room['id']}/t/{root}")
    page.locator("[data-testid=thread-list][aria-busy=false]").wait_for()

    fake_model.enqueue(
        tool_calls(tool_call("web_search", {"query": "offsite venues by train"})),
        stall(
            text("Lisbon fits: ", "direct trains, ", "mild weather, ", "venues under budget."),
            after=3,
        ),
    )
    box = page.get_by_role("textbox", name="Reply in thread")
    box.fill(f"@{planner['name']} which city fits?")
    box.press("Enter")
    reply = in_thread(page, "Lisbon fits")
    expect(reply).to_have_attribute("aria-busy", "true")
    expect(reply.get_by_test_id("tool-card")).to_contain_text("completed")
    chips = in_thread(page, "Where should the offsite be?").get_by_role("list", name="Reactions")
    expect(chips.get_by_role("button", name="👀 2: you, Mina")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(chips.get_by_role("button", name="🎉 1: Mina")).to_have_attribute(
        "aria-pressed", "false"
    )
    if size == "phone":
        # The thread is the whole view: the channel's list is out of the way.
        expect(page.get_by_test_id("message-list")).to_be_hidden()
    else:
        expect(
            in_channel(page, "Where should the offsite be?").get_by_test_id("thread-summary")
        ).to_contain_text("3 replies")
    in_thread(page, "Friday").hover()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert serious(page) == [], scheme
        shoot(page, f"thread-streaming-{size}-{scheme}")
    page.emulate_media(color_scheme="light")
    fake_model.release()
    expect(reply).to_have_attribute("aria-busy", "false")
    if size == "phone":
        page.get_by_role("button", name="Close the thread").click()
        expect(page.get_by_test_id("message-list")).to_be_visible()
    expect(
        in_channel(page, "Where should the offsite be?").get_by_test_id("thread-summary")
    ).to_contain_text("4 replies")
    in_channel(page, "Where should the offsite be?").focus()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert serious(page) == [], scheme
    shoot(page, f"thread-summary-{size}")
