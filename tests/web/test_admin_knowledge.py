"""An agent's knowledge base in the page: several files uploaded at once (chosen or dropped)
with a bar each through the upload and the embedding, the list, a query box that finds the
passage the agent is then given, and re-indexing with its progress."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.support import Api, Server, post, unique
from tests.web.conftest import DESKTOP, PHONE, Browse, Shot, agent, channel, log_in
from tests.web.test_accessibility import serious

ORCHARD = "# Orchard\n\n## Cider\n\nThe cider press is cleaned with hot water every Sunday.\n"
BIKES = "Bicycle care: oil the chain every 300 kilometres and wipe off the extra oil.\n"
TENANCY = "The tenant pays the rent on the first day of each month by bank transfer.\n"


def test_a_document_uploaded_in_the_page_is_found_and_given_to_the_agent(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    keeper = agent(web_owner, name=unique("Keeper"), avatar="🍎")
    page = browse.page()
    log_in(page, web_server.owner_key, f"/admin/agents/{keeper['id']}/knowledge")
    expect(page.get_by_role("heading", level=1, name=re.compile("Knowledge base"))).to_be_focused()
    marker = unique("")
    page.get_by_label("Documents to upload").set_input_files(
        [
            {"name": "orchard.md", "mimeType": "text/markdown", "buffer": ORCHARD.encode()},
            {"name": "bikes.txt", "mimeType": "text/plain", "buffer": f"{BIKES}{marker}".encode()},
        ]
    )
    uploads = page.get_by_role("list", name="Uploads")
    for name in ("orchard.md", "bikes.txt"):
        expect(uploads.get_by_role("progressbar", name=f"{name}: Ready")).to_be_visible(
            timeout=60_000
        )
    page.get_by_role("group", name=re.compile("Drop PDF")).dispatch_event(
        "drop", {"dataTransfer": _files(page, "tenancy.txt", TENANCY)}
    )
    expect(uploads.get_by_role("progressbar", name="tenancy.txt: Ready")).to_be_visible(
        timeout=60_000
    )
    documents = page.get_by_role("region", name="Documents")
    for name in ("orchard.md", "bikes.txt", "tenancy.txt"):
        expect(documents.get_by_role("row", name=re.compile(re.escape(name)))).to_contain_text(
            "Ready"
        )

    page.get_by_role("textbox", name="Query").fill("When is the cider press cleaned?")
    page.get_by_role("button", name="Search", exact=True).click()
    first = page.get_by_role("list", name="Passages").get_by_role("listitem").first
    expect(first).to_contain_text("orchard.md")
    expect(first).to_contain_text("every Sunday")
    expect(first).to_contain_text("score")

    room = channel(web_owner, [keeper])
    fake_model.enqueue(text("On Sundays."))
    post(web_owner, room["id"], f"@{keeper['name']} when is the cider press cleaned?")
    fake_model.wait_for_requests(1, timeout=30)
    prompt = json.dumps(fake_model.model_requests[0].body["messages"])
    assert "cleaned with hot water every Sunday" in prompt


def test_reindexing_shows_its_progress(browse: Browse, web_server: Server, web_owner: Api) -> None:
    keeper = agent(web_owner, name=unique("Indexer"))
    web_owner.post(
        "/api/rag/upload",
        files={"file": ("bikes.txt", f"{BIKES}{unique('')}".encode(), "text/plain")},
        data={"agentId": keeper["id"]},
    ).raise_for_status()
    page = browse.page()
    log_in(page, web_server.owner_key, f"/admin/agents/{keeper['id']}/knowledge")
    page.get_by_role("button", name="Re-index").click()
    expect(page.get_by_role("status").filter(has_text=re.compile("re-index", re.I))).to_be_visible()


def test_the_knowledge_screen_is_accessible_and_photographed(
    browse: Browse, web_server: Server, web_owner: Api, shoot: Shot
) -> None:
    keeper = agent(web_owner, name=unique("Archivist"), avatar="📚")
    for name, body in (("orchard.md", ORCHARD), ("tenancy.txt", TENANCY)):
        web_owner.post(
            "/api/rag/upload",
            files={"file": (name, f"{body}{unique('')}".encode(), "text/plain")},
            data={"agentId": keeper["id"]},
        ).raise_for_status()
    page = browse.page()
    log_in(page, web_server.owner_key, f"/admin/agents/{keeper['id']}/knowledge")
    # The uploads were answered before they were embedded: the screen takes their progress
    # events until both are ready, and a query asked meanwhile may find nothing yet.
    documents = page.get_by_role("region", name="Documents")
    for name in ("orchard.md", "tenancy.txt"):
        expect(documents.get_by_role("row", name=re.compile(re.escape(name)))).to_contain_text(
            "Ready", timeout=60_000
        )
    page.get_by_role("textbox", name="Query").fill("cider press")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.get_by_role("list", name="Passages")).to_be_visible(timeout=30_000)
    for viewport, label in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(viewport)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert serious(page) == [], (viewport, scheme)
            shoot(page, f"admin-knowledge-{label}-{scheme}")


def _files(page: object, name: str, body: str) -> object:
    """A DataTransfer holding one file, made in the page (as a drag from the desktop would)."""
    return page.evaluate_handle(  # type: ignore[attr-defined]
        """([name, body]) => {
            const transfer = new DataTransfer();
            transfer.items.add(new File([body], name, { type: "text/plain" }));
            return transfer;
        }""",
        [name, f"{body}{unique('')}"],
    )
