"""An agent's memories in the page: filtered, searched, edited (what the agent then recalls),
their history, and a restored version that the agent recalls again."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.support import Api, Server, post, unique
from tests.web.conftest import DESKTOP, PHONE, Browse, Shot, agent, channel, log_in
from tests.web.test_accessibility import serious

MISO = "The owner's cat is called Miso."
BISCUIT = "The owner's cat is called Biscuit."
DEPLOYS = "Deploys go out on Tuesdays, after the stand-up meeting."
QUESTION = "What is my cat called?"


def remember(owner: Api, agent_id: str, content: str, kind: str = "semantic") -> None:
    owner.ok("POST", f"/api/agents/{agent_id}/memories", json={"content": content, "type": kind})


def recalled(owner: Api, fake_model: FakeOpenAI, room: dict[str, str], name: str) -> str:
    """The system prompt of the agent's next reply to the question."""
    before = len(fake_model.model_requests)
    fake_model.enqueue(text("Let me think."))
    post(owner, room["id"], f"@{name} {QUESTION}")
    request = fake_model.wait_for_requests(before + 1, timeout=30)[before]
    return json.dumps(request.body["messages"])


def test_a_memory_edited_in_the_page_is_recalled_and_a_restored_version_comes_back(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    keeper = agent(web_owner, name=unique("Mnemo"), avatar="🧠")
    remember(web_owner, keeper["id"], MISO)
    remember(web_owner, keeper["id"], DEPLOYS, "procedural")
    room = channel(web_owner, [keeper])
    page = browse.page()
    log_in(page, web_server.owner_key, f"/admin/agents/{keeper['id']}/memories")
    memories = page.get_by_role("list", name="Memories")
    expect(memories.get_by_role("listitem")).to_have_count(2)

    page.get_by_label("Type").select_option("procedural")
    expect(memories.get_by_role("listitem")).to_have_count(1)
    expect(memories).to_contain_text(DEPLOYS)
    page.get_by_label("Type").select_option("")
    page.get_by_role("searchbox", name="Search by meaning").fill(QUESTION)
    page.get_by_role("button", name="Search", exact=True).click()
    expect(memories.get_by_role("listitem").first).to_contain_text(MISO)
    page.get_by_role("button", name="Show all").click()

    card = memories.get_by_role("listitem").filter(has_text=MISO)
    card.get_by_role("button", name="Edit").click()
    memories.get_by_label("Memory").fill(BISCUIT)
    memories.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved as version 2.")
    card = memories.get_by_role("listitem").filter(has_text=BISCUIT)
    expect(card).to_contain_text("version 2")

    prompt = recalled(web_owner, fake_model, room, keeper["name"])
    assert BISCUIT in prompt and MISO not in prompt

    card.get_by_role("button", name="History").click()
    versions = card.get_by_role("list", name="Versions")
    expect(versions.get_by_role("listitem")).to_have_count(2)
    versions.get_by_role("button", name="Restore version 1").click()
    expect(page.get_by_role("status")).to_have_text("Version 1 restored as version 3.")
    card = memories.get_by_role("listitem").filter(has_text=re.compile("version 3"))
    expect(card.locator(".content")).to_have_text(MISO)

    prompt = recalled(web_owner, fake_model, room, keeper["name"])
    assert MISO in prompt and BISCUIT not in prompt


def test_deleting_a_memory_asks_first(browse: Browse, web_server: Server, web_owner: Api) -> None:
    keeper = agent(web_owner, name=unique("Forgetful"))
    remember(web_owner, keeper["id"], MISO)
    page = browse.page()
    log_in(page, web_server.owner_key, f"/admin/agents/{keeper['id']}/memories")
    page.get_by_role("list", name="Memories").get_by_role("button", name="Delete").click()
    page.get_by_role("dialog", name="Delete this memory?").get_by_role(
        "button", name="Delete"
    ).click()
    expect(page.get_by_text("No memories yet.")).to_be_visible()
    assert web_owner.ok("GET", f"/api/agents/{keeper['id']}/memories")["memories"] == []


def test_the_memories_screen_is_accessible_and_photographed(
    browse: Browse, web_server: Server, web_owner: Api, shoot: Shot
) -> None:
    keeper = agent(web_owner, name=unique("Archivist"), avatar="🗂️")
    remember(web_owner, keeper["id"], MISO)
    remember(web_owner, keeper["id"], DEPLOYS, "procedural")
    web_owner.ok(
        "PUT",
        f"/api/agents/{keeper['id']}/memories/"
        + web_owner.ok("GET", f"/api/agents/{keeper['id']}/memories", params={"type": "semantic"})[
            "memories"
        ][0]["id"],
        json={"content": BISCUIT},
    )
    page = browse.page()
    log_in(page, web_server.owner_key, f"/admin/agents/{keeper['id']}/memories")
    card = (
        page.get_by_role("list", name="Memories").get_by_role("listitem").filter(has_text=BISCUIT)
    )
    card.get_by_role("button", name="History").click()
    expect(card.get_by_role("list", name="Versions")).to_be_visible()
    for viewport, label in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert serious(page) == [], (viewport, scheme)
            shoot(page, f"admin-memories-{label}-{scheme}")
