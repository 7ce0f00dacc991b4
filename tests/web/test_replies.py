"""Agent replies in the browser: streamed text, tool cards, stopping, failures, chains."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import http_error, stall, text, tool_call, tool_calls
from tests.support import Api, Server, unique
from tests.web.conftest import Browse, agent, channel, open_channel


def test_a_streamed_reply_shows_its_tool_card_then_settles_into_one_message(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    scout = agent(web_owner, name=unique("Scout"), avatar="🔎", tools=["web_search"])
    room = channel(web_owner, [scout])
    fake_model.enqueue(
        tool_calls(tool_call("web_search", {"query": "palaver chat"})),
        stall(text("Found ", "**three** ", "results."), after=2),
    )
    page = open_channel_page(browse, web_server, room["id"])
    page.get_by_role("textbox", name="Message").fill(f"@{scout['name']} look it up")
    page.keyboard.press("Enter")

    reply = page.locator("article", has_text=scout["name"]).filter(has_text="Found")
    expect(reply).to_have_attribute("aria-busy", "true")
    card = reply.get_by_test_id("tool-card")
    expect(card).to_contain_text("web_search")
    expect(card).to_contain_text("completed")
    card.get_by_role("button").click()
    expect(card).to_contain_text('"query": "palaver chat"')
    expect(card).to_contain_text("Result")
    expect(reply.get_by_role("button", name="Stop")).to_be_visible()

    fake_model.release()
    expect(reply).to_have_attribute("aria-busy", "false")
    expect(reply.locator("strong")).to_have_text("three")
    expect(reply.get_by_role("button", name="Stop")).to_have_count(0)
    expect(page.locator("article", has_text="Found three results.")).to_have_count(1)
    expect(page.get_by_test_id("tool-card")).to_have_count(1)
    # One polite status region says it once; the feed itself is no live region.
    expect(page.get_by_test_id("announcer")).to_have_text(f"{scout['name']} replied")
    assert page.get_by_test_id("announcer").get_attribute("aria-live") == "polite"
    assert page.locator("[data-testid=message-list] [aria-live], [role=log]").count() == 0
    feed = page.get_by_role("feed", name="Messages")
    articles = feed.locator("article")
    assert articles.first.get_attribute("aria-posinset") == "1"
    assert articles.last.get_attribute("aria-setsize") == str(articles.count())

    page.reload()
    page.locator("[data-testid=message-list][aria-busy=false]").wait_for()
    settled = page.locator("article", has_text="Found three results.")
    expect(settled).to_have_count(1)
    expect(settled.get_by_test_id("tool-card")).to_contain_text("web_search")


def test_a_reply_already_streaming_shows_its_text_so_far_and_can_be_stopped(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    slow = agent(web_owner, name=unique("Slow"))
    room = channel(web_owner, [slow])
    fake_model.enqueue(stall(text("The first half", " and the rest"), after=1))
    web_owner.ok(
        "POST",
        "/api/messages",
        json={"channelId": room["id"], "content": f"@{slow['name']} go", "type": "text"},
    )
    fake_model.wait_for_requests(1)
    page = open_channel_page(browse, web_server, room["id"])
    reply = page.locator("article", has_text="The first half")
    expect(reply).to_have_attribute("aria-busy", "true")
    reply.get_by_role("button", name="Stop").click()
    expect(reply).to_contain_text("Stopped.")
    expect(reply).to_have_attribute("aria-busy", "false")
    expect(page.locator("article", has_text="The first half")).to_have_count(1)


def test_a_failed_reply_shows_its_error(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    broken = agent(web_owner, name=unique("Broken"))
    room = channel(web_owner, [broken])
    fake_model.enqueue(http_error(503, "model overloaded"))
    page = open_channel_page(browse, web_server, room["id"])
    page.get_by_role("textbox", name="Message").fill(f"@{broken['name']} hi")
    page.keyboard.press("Enter")
    failure = page.locator("article", has_text="The reply failed")
    expect(failure).to_contain_text(broken["name"])
    expect(failure).to_contain_text("failed (HTTP 503)")
    expect(failure).not_to_contain_text("model overloaded")  # the vendor's words stay in the log
    # Said once by the page's status region, not by a live region in a row that re-renders.
    assert failure.get_by_role("alert").count() == 0
    expect(page.get_by_test_id("announcer")).to_contain_text(f"{broken['name']}'s reply failed: ")


def test_a_chain_shows_its_progress_and_pauses_after_the_running_step(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    first = agent(web_owner, name=unique("Ada"), avatar="🧮")
    second = agent(web_owner, name=unique("Bea"), avatar="🐝")
    room = channel(web_owner, [first, second])
    fake_model.enqueue(stall(text("step one", " done"), after=1), text("step two done"))
    page = open_channel_page(browse, web_server, room["id"])
    page.get_by_role("textbox", name="Message").fill(
        f"@{first['name']} @{second['name']} work together"
    )
    page.keyboard.press("Enter")
    strip = page.get_by_test_id("chain-strip")
    expect(strip).to_contain_text("Step 1 of 2")
    expect(strip).to_contain_text(first["name"])
    expect(strip).to_contain_text("running")
    strip.get_by_role("button", name="Pause").click()
    expect(strip).to_contain_text("pausing after this step")
    fake_model.release()
    expect(strip).to_contain_text("paused")
    expect(strip).to_contain_text("Step 2 of 2")
    expect(strip).to_contain_text(second["name"])
    assert len(fake_model.model_requests) == 1
    strip.get_by_role("button", name="Resume").click()
    expect(strip).to_contain_text("completed")
    expect(page.locator("article", has_text="step two done")).to_have_count(1)
    strip.get_by_role("button", name="Dismiss the chain status").click()
    expect(strip).to_have_count(0)


def test_a_chain_can_be_cancelled_from_the_strip(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    first = agent(web_owner, name=unique("Cy"))
    second = agent(web_owner, name=unique("Di"))
    room = channel(web_owner, [first, second])
    fake_model.enqueue(stall(text("only", " me"), after=1))
    page = open_channel_page(browse, web_server, room["id"])
    page.get_by_role("textbox", name="Message").fill(f"@{first['name']} @{second['name']} go")
    page.keyboard.press("Enter")
    strip = page.get_by_test_id("chain-strip")
    expect(strip).to_contain_text("running")
    strip.get_by_role("button", name="Cancel").click()
    expect(strip).to_contain_text("cancelling after this step")
    fake_model.release()
    expect(strip).to_contain_text("cancelled")
    assert len(fake_model.model_requests) == 1


def open_channel_page(browse: Browse, server: Server, channel_id: str) -> Any:
    page = browse.page()
    open_channel(page, server, channel_id)
    return page
