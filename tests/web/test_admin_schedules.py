"""The schedules screen: made in the page, a one-shot posts at its time; times show in the
viewer's zone; pause, resume and delete."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.support import Api, Server, history, unique, wait_until
from tests.web.conftest import Browse, agent, channel, log_in
from tests.web.test_accessibility import serious

TOKYO = ZoneInfo("Asia/Tokyo")
"""Nine hours from UTC all year: a time shown in UTC instead would be plainly wrong."""


def test_a_one_shot_made_in_the_page_posts_at_its_time_shown_in_the_viewers_zone(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    gardener = agent(web_owner, name=unique("Gardener"), avatar="🌱")
    room = channel(web_owner, [gardener], name=unique("garden-"))
    page = browse.page(timezone_id="Asia/Tokyo")
    log_in(page, web_server.owner_key, "/admin/schedules")
    expect(page.get_by_role("heading", level=1, name="Schedules")).to_be_visible()
    expect(page.get_by_text("Asia/Tokyo").first).to_be_visible()

    due = (datetime.now(TOKYO) + timedelta(seconds=6)).replace(microsecond=0)
    page.get_by_role("combobox", name=re.compile("^Agent")).select_option(gardener["id"])
    page.get_by_role("combobox", name=re.compile("^Channel")).select_option(room["id"])
    page.get_by_label("Once").check()
    page.get_by_label("Date and time").fill(due.strftime("%Y-%m-%dT%H:%M:%S"))
    prompt = unique("Water the ferns ")
    page.get_by_label("Prompt").fill(prompt)
    page.get_by_role("button", name="Create schedule").click()

    row = page.get_by_role("row").filter(has_text=prompt)
    expect(row).to_contain_text(gardener["name"])
    expect(row).to_contain_text(room["name"])
    expect(row).to_contain_text(due.strftime("%H:%M:%S"))
    assert serious(page) == []

    def posted() -> bool:
        return any(m["content"] == prompt for m in history(web_owner, room["id"]))

    wait_until(posted, timeout=30, what="the scheduled prompt")
    [message] = [m for m in history(web_owner, room["id"]) if m["content"] == prompt]
    assert message["metadata"]["dueAt"].startswith(
        due.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%S")
    )
    expect(row).to_contain_text("Posted", timeout=20_000)
    expect(row).to_contain_text("Done")


def test_a_cron_schedule_is_paused_resumed_and_deleted_in_the_page(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    reporter = agent(web_owner, name=unique("Reporter"), avatar="📰")
    room = channel(web_owner, [reporter], name=unique("news-"))
    page = browse.page()
    log_in(page, web_server.owner_key, "/admin/schedules")
    page.get_by_role("combobox", name=re.compile("^Agent")).select_option(reporter["id"])
    page.get_by_label("Repeating (cron)").check()
    page.get_by_label("Cron expression").fill("every monday")
    prompt = unique("Weekly digest ")
    page.get_by_label("Prompt").fill(prompt)
    page.get_by_role("button", name="Create schedule").click()
    expect(page.get_by_role("alert")).to_contain_text("is not a cron expression of five fields")

    page.get_by_label("Cron expression").fill("0 9 * * 1")
    page.get_by_role("button", name="Create schedule").click()
    row = page.get_by_role("row").filter(has_text=prompt)
    expect(row).to_contain_text("0 9 * * 1")
    expect(row).to_contain_text("UTC")
    expect(row).to_contain_text("09:00:00")
    expect(row).to_contain_text("Not run yet")

    row.get_by_role("button", name="Pause").click()
    expect(row).to_contain_text("Paused")
    [listed] = [
        s for s in web_owner.ok("GET", "/api/schedules")["schedules"] if s["prompt"] == prompt
    ]
    assert listed["state"] == "paused" and listed["channelId"] == room["id"]
    row.get_by_role("button", name="Resume").click()
    expect(row.get_by_role("button", name="Pause")).to_be_visible()
    row.get_by_role("button", name="Delete").click()
    expect(row).to_have_count(0)
    assert all(s["id"] != listed["id"] for s in web_owner.ok("GET", "/api/schedules")["schedules"])
