"""Nothing a message, a file name or an agent's output holds may run script or reach another
host: every case below renders inert, with no dialog, no script error, no CSP violation and
no request leaving the server (the `browse` fixture checks all of that when a test ends)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.support import Api, Server, post, unique
from tests.web.conftest import Browse, agent, channel, open_channel

HOSTILE = [
    '<img src=x onerror="alert(1)">',
    "<script>alert(2)</script>",
    "[click me](javascript:alert(3))",
    '<a href="javascript:alert(4)">link</a>',
    "![tracker](https://evil.example/pixel.png)",
    '<svg><script>alert(5)</script><circle onload="alert(6)"/></svg>',
    '<iframe src="https://evil.example/"></iframe>',
    '<div style="background:url(https://evil.example/bg.png)">styled</div>',
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCg3KTwvc2NyaXB0Pg==)",
    '<form action="https://evil.example/"><button>go</button></form>',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(8)></style></mglyph>"
    "</table></mtext></math>",
    '<a href="https://example.org/" onclick="alert(9)">clickable</a>',
    "[outside](https://example.org/)",
]


def test_hostile_markdown_and_html_in_messages_render_inert(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    room = channel(web_owner, [])
    for content in HOSTILE:
        post(web_owner, room["id"], content)
    page = browse.page()
    open_channel(page, web_server, room["id"])
    log = page.get_by_role("feed", name="Messages")
    expect(log.locator("article")).to_have_count(len(HOSTILE))
    page.wait_for_timeout(300)
    assert (
        log.locator("script, iframe, svg.md, form, math, [onerror], [onload], [onclick]").count()
        == 0
    )
    assert log.locator(".md [style]").count() == 0
    assert log.locator(".md img").count() == 0
    assert log.locator("a[href^='javascript'], a[href^='data']").count() == 0
    expect(log.get_by_text("[image: tracker]")).to_be_visible()
    expect(log.get_by_text('<img src=x onerror="alert(1)">')).to_be_visible()
    outside = log.get_by_role("link", name="outside")
    expect(outside).to_have_attribute("rel", "noopener noreferrer nofollow")
    expect(outside).to_have_attribute("target", "_blank")


def test_an_agents_hostile_output_renders_inert_while_streaming_and_after(
    browse: Browse, web_server: Server, web_owner: Api, fake_model: FakeOpenAI
) -> None:
    bot = agent(web_owner, name=unique("Mallory"))
    room = channel(web_owner, [bot])
    page = browse.page()
    open_channel(page, web_server, room["id"])
    fake_model.enqueue(
        text("<img src=x ", 'onerror="alert(1)">', " and <scr", "ipt>alert(2)</script> done")
    )
    page.get_by_role("textbox", name="Message").fill(f"@{bot['name']} say it")
    page.keyboard.press("Enter")
    reply = page.locator("article", has_text="done")
    expect(reply).to_have_attribute("aria-busy", "false")
    assert reply.locator("img, script, [onerror]").count() == 0


def test_a_hostile_file_name_stays_text(browse: Browse, web_server: Server, web_owner: Api) -> None:
    room = channel(web_owner, [])
    url = web_owner.post(
        "/api/upload", files={"file": ("x.svg", b"<svg onload=alert(1)></svg>", "image/svg+xml")}
    ).json()["url"]
    name = '"><img src=x onerror=alert(1)>.svg'
    web_owner.ok(
        "POST",
        "/api/messages",
        json={"channelId": room["id"], "content": url, "type": "image", "metadata": {"name": name}},
    )
    web_owner.ok(
        "POST",
        "/api/messages",
        json={"channelId": room["id"], "content": "javascript:alert(1)", "type": "image"},
    )
    page = browse.page()
    open_channel(page, web_server, room["id"])
    link = page.get_by_role("link", name=name)
    expect(link).to_be_visible()
    assert link.get_attribute("href") == url
    log = page.get_by_role("feed", name="Messages")
    assert log.locator("img").count() == 0, "an SVG is never shown inline"
    assert log.locator("a[href^='javascript']").count() == 0


def test_markdown_shows_as_its_text_until_the_parser_comes_then_renders_inert(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    """The Markdown parser is its own chunk, fetched as the page starts: held back, a message
    shows its escaped source (never unsanitized HTML), and renders once the chunk arrives."""
    room = channel(web_owner, [])
    post(web_owner, room["id"], "**bold** and `code` <img src=x onerror=alert(1)>")
    post(web_owner, room["id"], "a plain line")
    page = browse.page()
    held: list[Any] = []
    page.route("**/assets/markdownParser-*.js", lambda route: held.append(route))
    open_channel(page, web_server, room["id"])
    log = page.get_by_role("feed", name="Messages")
    expect(log.get_by_text("a plain line")).to_be_visible()
    expect(log.get_by_text("**bold** and `code` <img src=x onerror=alert(1)>")).to_be_visible()
    assert log.locator("strong, img, [onerror]").count() == 0
    assert len(held) == 1
    held[0].continue_()
    expect(log.locator("strong", has_text="bold")).to_be_visible()
    expect(log.locator("code", has_text="code")).to_be_visible()
    assert log.locator("img, [onerror]").count() == 0
    expect(log.get_by_text("<img src=x onerror=alert(1)>")).to_be_visible()
