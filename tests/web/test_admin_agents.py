"""The owner's agent screens: the list, one form to create and edit (its server errors beside
their fields), delete with what goes with it; the persona written in the form is what the
model is given."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.support import Api, Server, unique
from tests.web.conftest import DESKTOP, PHONE, Browse, Shot, agent, channel, log_in
from tests.web.test_accessibility import serious


def test_an_agent_created_then_edited_in_the_form_answers_with_its_new_persona(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    name = unique("Quill")
    page = browse.page()
    log_in(page, web_server.owner_key, "/admin/agents")
    page.get_by_role("link", name="New agent").click()
    expect(page.get_by_role("heading", level=1, name="New agent")).to_be_focused()
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_role("button", name="Avatar 🦉").click()
    page.get_by_label("Description", exact=True).fill("Writes letters.")
    page.get_by_label("Model", exact=True).select_option("fake/gpt-fake")
    page.get_by_role("checkbox", name=re.compile("^web_search")).check()
    page.get_by_role("textbox", name=re.compile("^SOUL.md")).fill("You are a polite scribe.")
    page.get_by_role("button", name="Create agent").click()

    expect(page.get_by_role("heading", level=1, name=f"Edit {name}")).to_be_visible()
    agent_id = page.url.rsplit("/", 1)[-1]
    made = web_owner.ok("GET", f"/api/agents/{agent_id}")["agent"]
    assert (made["avatar"], made["model"], made["tools"]) == ("🦉", "fake/gpt-fake", ["web_search"])

    page.get_by_role("textbox", name=re.compile("^SOUL.md")).fill(
        "# Pirate\n\nYou speak like a **pirate**."
    )
    preview = page.get_by_role("region", name="SOUL.md preview")
    expect(preview.get_by_role("heading", name="Pirate")).to_be_visible()
    expect(preview.locator("strong")).to_have_text("pirate")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")

    room = channel(web_owner, [made])
    page.goto(f"/c/{room['id']}")
    page.locator("[data-testid=message-list][aria-busy=false]").wait_for()
    fake_model.enqueue(text("Arr, ahoy."))
    page.get_by_role("textbox", name="Message").fill(f"@{name} greet me")
    page.keyboard.press("Enter")
    expect(page.locator("article", has_text="Arr, ahoy.")).to_have_attribute("aria-busy", "false")
    prompt = json.dumps(fake_model.model_requests[-1].body["messages"])
    assert "You speak like a **pirate**." in prompt
    assert "polite scribe" not in prompt


def test_the_servers_errors_show_beside_the_field_they_concern(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    taken = agent(web_owner, name=unique("Taken"))
    page = browse.page()
    log_in(page, web_server.owner_key, "/admin/agents/new")
    page.get_by_label("Name", exact=True).fill(taken["name"])
    page.get_by_label("Model", exact=True).select_option(label="Another model (type its id)…")
    page.get_by_label("Model id").fill("fake/gpt-fake-mini")
    page.get_by_role("button", name="Create agent").click()
    name = page.get_by_label("Name", exact=True)
    expect(name).to_have_attribute("aria-invalid", "true")
    expect(name).to_have_accessible_description(re.compile("exists already"))
    expect(name).to_be_focused()

    page.get_by_label("Name", exact=True).fill(unique("Fresh"))
    page.get_by_label("Model id").fill("nowhere/model")
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_label("Model id")).to_have_accessible_description(re.compile("nowhere"))


def test_deleting_an_agent_says_what_goes_with_it(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    doomed = agent(web_owner, name=unique("Doomed"), avatar="🪦")
    page = browse.page()
    log_in(page, web_server.owner_key, "/admin/agents")
    page.get_by_role("link", name=doomed["name"], exact=True).click()
    page.get_by_role("button", name="Delete agent").click()
    dialog = page.get_by_role("dialog", name=f"Delete {doomed['name']}?")
    expect(dialog).to_contain_text("knowledge base")
    expect(dialog).to_contain_text("memories")
    expect(dialog).to_contain_text("schedules")
    dialog.get_by_role("button", name=f"Delete {doomed['name']}").click()
    page.wait_for_url("**/admin/agents")
    expect(page.get_by_role("link", name=doomed["name"], exact=True)).to_have_count(0)
    assert web_owner.get(f"/api/agents/{doomed['id']}").status_code == 404


def test_the_agent_screens_are_accessible_and_photographed(
    browse: Browse, web_server: Server, web_owner: Api, shoot: Shot
) -> None:
    shown = agent(
        web_owner,
        name=unique("Sage"),
        avatar="🦉",
        description="Answers questions about the orchard.",
        tools=["web_search", "rag_query"],
        soul="# Sage\n\nYou answer **briefly**, citing the orchard notes.",
    )
    page = browse.page()
    log_in(page, web_server.owner_key, "/admin/agents")
    expect(page.get_by_role("link", name=shown["name"], exact=True)).to_be_visible()
    for viewport, label in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert serious(page) == [], ("list", viewport, scheme)
        page.emulate_media(color_scheme="light")
        shoot(page, f"admin-agents-{label}-light")
    page.set_viewport_size(DESKTOP)
    page.goto(f"/admin/agents/{shown['id']}")
    expect(page.get_by_role("heading", level=1, name=f"Edit {shown['name']}")).to_be_visible()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert serious(page) == [], ("form", scheme)
        shoot(page, f"admin-agent-form-desktop-{scheme}")
