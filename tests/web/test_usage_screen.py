"""The usage screen (issue 24): real agent replies through the fake model fill the ledger; the
screen shows them by agent, person and model with names, in the tables and in the charts' days,
notes the calls without a price and links to the prices, which are set, kept and removed in the
settings; it downloads the table shown as CSV, sets and removes budgets; the owner is warned in
the page at 80% of a budget and again when it is spent; a guest sees none of it. axe finds no
serious violation, and the screenshots in docs/screenshots are taken from it."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.fakes.search_servers import FakeSearchServer
from tests.support import Api, Guest, Server, post, sql, unique, wait_until
from tests.web.admin_pictures import accessible_and_pictured
from tests.web.conftest import DESKTOP, PHONE, Browse, Shot, agent, channel, configure, log_in
from tests.web.test_accessibility import serious

PRICED = "fake/gpt-test"
PRICE = {"input": 3.0, "output": 15.0}


@pytest.fixture(scope="module")
def usage_server(
    tmp_path_factory: pytest.TempPathFactory, fake_model: FakeOpenAI, searxng: FakeSearchServer
) -> Iterator[Server]:
    """A server of this module's own: its ledger and budgets are what these tests make."""
    srv = Server(tmp_path_factory.mktemp("usage"))
    srv.start()
    with srv.login() as owner:
        configure(owner, fake_model, searxng)
        owner.ok("PUT", "/api/settings", json={"prices": {PRICED: PRICE}})
    yield srv
    srv.stop()


@pytest.fixture
def owner(usage_server: Server) -> Iterator[Api]:
    """The owner's API; the budgets a test set go when it ends."""
    api = usage_server.login()
    yield api
    budgets = api.ok("GET", "/api/settings")["settings"]["budgets"]
    patch = {
        "agents": {a: None for a in budgets["agents"]},
        "guests": {g: None for g in budgets["guests"]},
        "total": None,
    }
    api.ok("PUT", "/api/settings", json={"budgets": patch})
    api.close()


def calls_of(owner: Api, agent_id: str) -> int:
    rows = owner.ok("GET", "/api/usage", params={"groupBy": "agent"})["rows"]
    return next((r["calls"] for r in rows if r["key"] == agent_id), 0)


def reply(
    fake: FakeOpenAI,
    owner: Api,
    by: Api,
    room: dict[str, Any],
    bot: dict[str, Any],
    usage: tuple[int, int],
) -> None:
    """One mention of `bot` by `by`, answered with these token counts, in the ledger."""
    before = calls_of(owner, bot["id"])
    fake.enqueue(text("Noted.", usage=usage))
    post(by, room["id"], f"@{bot['name']} go")
    wait_until(
        lambda: calls_of(owner, bot["id"]) > before, timeout=30, what="the reply's ledger row"
    )


def test_breakdowns_name_agents_people_and_models_and_the_csv_holds_the_table(
    browse: Browse, usage_server: Server, owner: Api, fake_model: FakeOpenAI, tmp_path: Path
) -> None:
    scout = agent(owner, name=unique("Scout"), avatar="🔭")
    cheap = agent(owner, name=unique('Cheap, "quoted"'), model="fake/mini-unpriced")
    with Guest(usage_server, owner, name=unique("Maya ")) as maya:
        room = channel(owner, [scout, cheap], memberIds=[maya.id])
        reply(fake_model, owner, owner, room, scout, (1000, 200))
        reply(fake_model, owner, maya.api, room, scout, (3000, 400))
        reply(fake_model, owner, maya.api, room, cheap, (500, 50))

        page = browse.page(server=usage_server)
        log_in(page, usage_server.owner_key, "/admin/usage")
        expect(page.get_by_role("heading", level=1, name="Usage")).to_be_focused()
        expect(page.get_by_role("button", name="This month")).to_have_attribute(
            "aria-pressed", "true"
        )
        table = page.get_by_role("tabpanel").get_by_role("table")
        scout_row = table.get_by_role("row").filter(has_text=scout["name"])
        # Input 4,000, output 600, cost (4000 * 3 + 600 * 15) / 1e6 = 0.021.
        expect(scout_row).to_contain_text("4,000")
        expect(scout_row).to_contain_text("4,600")
        expect(scout_row).to_contain_text("0.021")
        cheap_row = table.get_by_role("row").filter(has_text=cheap["name"])
        expect(cheap_row.get_by_role("cell").last).to_have_text("1")
        expect(page.get_by_test_id("unpriced-note")).to_contain_text("without a price")

        page.get_by_role("tab", name="Person").click()
        maya_row = table.get_by_role("row").filter(has_text=maya.user["name"])
        expect(maya_row).to_contain_text("3,950")
        expect(table.get_by_role("row").filter(has_text="(you)")).to_be_visible()

        page.get_by_role("tab", name="Model").click()
        expect(table.get_by_role("row").filter(has_text="fake/mini-unpriced")).to_contain_text(
            "550"
        )
        page.get_by_role("tab", name="Model").press("ArrowLeft")
        expect(page.get_by_role("tab", name="Person")).to_be_focused()
        expect(page.get_by_role("tab", name="Person")).to_have_attribute("aria-selected", "true")

        chart = page.get_by_role("img", name="Tokens per day")
        expect(chart).to_have_accessible_description(
            re.compile(r"tokens from .* The busiest day was")
        )

        page.get_by_role("tab", name="Agent").click()
        with page.expect_download() as download:
            page.get_by_role("button", name="Download CSV").click()
        saved = tmp_path / "usage.csv"
        download.value.save_as(saved)
        today = datetime.now(UTC).date()
        assert download.value.suggested_filename == (
            f"palaver-usage-by-agent-{today.replace(day=1)}-to-{today}.csv"
        )
        raw = saved.read_bytes()
        assert raw.endswith(b"\r\n")
        rows = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
        assert rows[0] == [
            "Agent ID",
            "Agent",
            "Input tokens",
            "Output tokens",
            "Cached tokens",
            "Total tokens",
            "Cost",
            "Calls",
            "Unpriced calls",
        ]
        by_id = {r[0]: r for r in rows[1:]}
        assert by_id[scout["id"]][1:] == [
            scout["name"],
            "4000",
            "600",
            "0",
            "4600",
            "0.021",
            "2",
            "0",
        ]
        assert by_id[cheap["id"]][1:] == [cheap["name"], "500", "50", "0", "550", "0", "1", "1"]
        api_rows = owner.ok("GET", "/api/usage", params={"groupBy": "agent"})["rows"]
        assert set(by_id) == {r["key"] for r in api_rows}


def test_the_charts_split_each_day_by_agent_person_or_model_with_names(
    browse: Browse, usage_server: Server, owner: Api, fake_model: FakeOpenAI
) -> None:
    ada = agent(owner, name=unique("Ada"))
    bob = agent(owner, name=unique("Bob"), model="fake/gpt-split")
    with Guest(usage_server, owner, name=unique("Rin ")) as rin:
        room = channel(owner, [ada, bob], memberIds=[rin.id])
        reply(fake_model, owner, owner, room, ada, (9000, 1000))
        reply(fake_model, owner, rin.api, room, bob, (300, 20))

        page = browse.page(server=usage_server)
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url) if "/api/usage" in r.url else None)
        log_in(page, usage_server.owner_key, "/admin/usage")
        legend = page.get_by_role("list", name="Colours of the charts")
        expect(page.get_by_role("button", name="By agent")).to_have_attribute(
            "aria-pressed", "true"
        )
        expect(legend.get_by_role("listitem").filter(has_text=ada["name"])).to_have_count(1)
        expect(legend.get_by_role("listitem").filter(has_text=bob["name"])).to_have_count(1)
        tokens = page.get_by_role("img", name="Tokens per day")
        expect(tokens).to_have_accessible_description(re.compile(r"The agent with the most was "))
        # The charts' grouping by day, and each other grouping once (the budgets' own reads of
        # the month go without a range).
        report = [u for u in asked if "from=" in u]
        assert len(report) == 4, report
        assert sum("per=day" in u and "groupBy=agent" in u for u in report) == 1, report

        asked.clear()
        page.get_by_role("button", name="By model").click()
        expect(legend.get_by_role("listitem").filter(has_text="fake/gpt-split")).to_have_count(1)
        expect(legend.get_by_role("listitem").filter(has_text=PRICED)).to_have_count(1)
        expect(legend).not_to_contain_text(ada["name"])
        expect(tokens).to_have_accessible_description(
            re.compile(r"The model with the most was fake/gpt-test, with [\d,]+ tokens")
        )
        expect(page.get_by_role("img", name="Cost per day")).to_have_accessible_description(
            re.compile(r"The model with the most was fake/gpt-test, with ")
        )
        # This month reaches today, whose figures move: every table is read again with it.
        assert [u for u in asked if "from=" in u and "per=day" in u and "groupBy=model" in u]
        assert len([u for u in asked if "from=" in u]) == 4, asked

        page.get_by_role("button", name="By person").click()
        expect(legend.get_by_role("listitem").filter(has_text=rin.user["name"])).to_have_count(1)
        expect(legend.get_by_role("listitem").filter(has_text="(you)")).to_have_count(1)
        # The parts of today's bars: a person each, by their colour.
        fills = page.evaluate(
            """[...new Set([...document.querySelectorAll('svg[role=img] rect.part')]
                .map((r) => getComputedStyle(r).fill))]"""
        )
        assert len(fills) >= 2, fills
        # The day table is summed from the charts' answer: the server's own sums by day.
        page.get_by_role("tab", name="Day").click()
        by_day = owner.ok("GET", "/api/usage", params={"groupBy": "day"})["rows"]
        total = sum(r["inputTokens"] + r["outputTokens"] for r in by_day)
        footer = page.get_by_role("tabpanel").locator("tfoot [data-label='Total tokens']")
        expect(footer).to_have_text(f"{total:,}")


def test_prices_are_added_kept_and_removed_in_the_settings_reached_from_the_usage_note(
    browse: Browse, usage_server: Server, owner: Api, fake_model: FakeOpenAI
) -> None:
    model = f"fake/{unique('mini-').lower()}"
    cheap = agent(owner, name=unique("Frugal"), model=model)
    room = channel(owner, [cheap])
    reply(fake_model, owner, owner, room, cheap, (100, 10))

    page = browse.page(server=usage_server)
    log_in(page, usage_server.owner_key, "/admin/usage")
    page.get_by_test_id("unpriced-note").get_by_role("link", name="Set the models' prices").click()
    page.wait_for_url("**/admin/settings#prices")
    prices = page.get_by_role("form", name="Prices")
    expect(prices).to_be_in_viewport()
    expect(page.locator("#prices")).to_be_focused()
    kept = prices.get_by_role("group", name=PRICED)
    expect(kept.get_by_label("Input", exact=True)).to_have_value("3")
    expect(kept.get_by_label("Output", exact=True)).to_have_value("15")

    prices.get_by_role("button", name="Add a model").click()
    new = prices.get_by_role("group", name="New price")
    field = new.get_by_label("Model (provider/model)")
    expect(field).to_be_focused()
    options = page.evaluate(
        "id => [...document.getElementById(id).options].map((o) => o.value)",
        field.get_attribute("list"),
    )
    assert model in options and PRICED not in options, options
    field.fill("gpt-5")
    new.get_by_label("Input", exact=True).fill("0.4")
    new.get_by_label("Output", exact=True).fill("1.6")
    prices.get_by_role("button", name="Save prices").click()
    expect(field).to_have_accessible_description("Name the model as agents do: provider/model.")
    field.fill(model)
    new.get_by_label("Cached input").fill("0.1")
    prices.get_by_role("button", name="Save prices").click()
    expect(prices.get_by_role("status")).to_have_text("Saved.")
    assert owner.ok("GET", "/api/settings")["settings"]["prices"][model] == {
        "input": 0.4,
        "output": 1.6,
        "cachedInput": 0.1,
    }

    page.reload()
    saved = page.get_by_role("form", name="Prices").get_by_role("group", name=model)
    expect(saved.get_by_label("Cached input")).to_have_value("0.1")
    # A price the server refuses: its message under the field it names.
    saved.get_by_label("Output", exact=True).fill("2000000")
    page.get_by_role("button", name="Save prices").click()
    output = saved.get_by_label("Output", exact=True)
    expect(output).to_have_attribute("aria-invalid", "true")
    expect(output).to_have_accessible_description(re.compile("less than or equal to 1000000"))
    expect(page.get_by_role("form", name="Prices").get_by_role("alert")).to_have_text(
        f"Not saved: the price of {model} was refused."
    )
    assert serious(page) == []

    saved.get_by_role("button", name=f"Remove the price of {model}").click()
    expect(page.get_by_role("button", name="Add a model")).to_be_focused()
    page.get_by_role("button", name="Save prices").click()
    expect(page.get_by_role("form", name="Prices").get_by_role("status")).to_have_text("Saved.")
    stored = owner.ok("GET", "/api/settings")["settings"]["prices"]
    assert model not in stored and stored[PRICED] == {**PRICE, "cachedInput": None}


def test_the_owner_is_warned_at_80_percent_and_again_when_a_budget_is_spent(
    browse: Browse, usage_server: Server, owner: Api, fake_model: FakeOpenAI
) -> None:
    bot = agent(owner, name=unique("Thrift"))
    room = channel(owner, [bot])
    owner.ok(
        "PUT", "/api/settings", json={"budgets": {"agents": {bot["id"]: {"monthlyTokens": 1000}}}}
    )
    reply(fake_model, owner, owner, room, bot, (800, 50))

    page = browse.page(server=usage_server)
    # The agents' list answers after the warning is shown (as it once did in CI): the warning is
    # said only when the agent's name is known, never as "a deleted agent".
    held: list[Any] = []
    released = False

    def hold(route: Any) -> None:
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route("**/api/agents", hold)
    log_in(page, usage_server.owner_key, f"/c/{room['id']}")
    warning = page.get_by_test_id("budget-warning")
    expect(warning).to_contain_text("85% of the monthly token budget of the agent")
    expect(page.get_by_test_id("announcer")).not_to_contain_text("Budget warning")
    released = True
    for route in held:
        route.continue_()
    expect(warning).to_contain_text(
        f"85% of the monthly token budget of the agent {bot['name']} is used (850 of 1,000 tokens)."
    )
    expect(page.get_by_test_id("announcer")).to_have_text(
        f"Budget warning: 85% of the monthly token budget of the agent {bot['name']} is used"
        " (850 of 1,000 tokens)."
    )
    page.get_by_role("button", name="Dismiss the budget warning").click()
    expect(warning).to_have_count(0)

    # A reply in the page ends; a few seconds later the numbers are asked again: now spent.
    fake_model.enqueue(text("That was a lot.", usage=(200, 100)))
    page.get_by_role("textbox", name="Message").fill(f"@{bot['name']} more")
    page.keyboard.press("Enter")
    expect(warning).to_contain_text(
        f"The monthly token budget of the agent {bot['name']} is spent (1,150 of 1,000 tokens)",
        timeout=30_000,
    )
    expect(warning).to_contain_text("refused until it resets on")

    warning.get_by_role("link", name="See budgets").click()
    page.wait_for_url("**/admin/usage#budgets")
    expect(page.get_by_test_id("budget-warning")).to_have_count(0)
    card = page.get_by_test_id("budget").filter(has_text=bot["name"])
    expect(card).to_contain_text("Spent")
    expect(card).to_contain_text("1,150 of 1,000 tokens · 115%")
    expect(page.get_by_role("heading", name="Budgets this month")).to_be_in_viewport()
    expect(page.locator("#budgets")).to_be_focused()


def test_budgets_are_set_changed_and_removed_on_the_usage_screen(
    browse: Browse, usage_server: Server, owner: Api
) -> None:
    bot = agent(owner, name=unique("Capped"))
    with Guest(usage_server, owner, name=unique("Gale ")) as gale:
        page = browse.page(server=usage_server)
        log_in(page, usage_server.owner_key, "/admin/usage")
        form = page.get_by_role("form", name="Set a budget")
        form.get_by_label("For").select_option(label="The whole install")
        form.get_by_label("Cost a month").fill("25")
        form.get_by_role("button", name="Save budget").click()
        expect(page.get_by_test_id("budget").filter(has_text="The whole install")).to_contain_text(
            "of 25.00"
        )

        form.get_by_label("For").select_option(label=bot["name"])
        form.get_by_label("Tokens a month").fill("50000")
        form.get_by_role("button", name="Save budget").click()
        expect(page.get_by_test_id("budget").filter(has_text=bot["name"])).to_contain_text(
            "of 50,000 tokens"
        )

        form.get_by_label("For").select_option(label=gale.user["name"])
        form.get_by_role("button", name="Save budget").click()
        expect(form.get_by_role("alert")).to_have_text(
            "Give a monthly token cap, a cost cap or both."
        )
        form.get_by_label("Tokens a month").fill("7000")
        form.get_by_role("button", name="Save budget").click()
        expect(page.get_by_test_id("budget").filter(has_text=gale.user["name"])).to_be_visible()

        page.get_by_role("button", name=f"Change the budget of {bot['name']}").click()
        change = page.get_by_role("form", name="Change a budget")
        expect(change.get_by_label("For")).to_be_focused()
        expect(change.get_by_label("Tokens a month")).to_have_value("50000")
        change.get_by_label("Tokens a month").fill("")
        change.get_by_label("Cost a month").fill("3.5")
        change.get_by_role("button", name="Save budget").click()
        expect(page.get_by_test_id("budget").filter(has_text=bot["name"])).to_contain_text(
            "of 3.50"
        )
        page.get_by_role("button", name="Remove the budget of The whole install").click()
        expect(page.get_by_test_id("budget").filter(has_text="The whole install")).to_have_count(0)

        budgets = owner.ok("GET", "/api/settings")["settings"]["budgets"]
        assert budgets["total"] is None
        assert budgets["agents"][bot["id"]] == {"monthlyTokens": None, "monthlyCost": 3.5}
        assert budgets["guests"][gale.id] == {"monthlyTokens": 7000, "monthlyCost": None}


def test_a_guest_sees_no_usage_screen_nor_budget_warning(
    browse: Browse, usage_server: Server, owner: Api, fake_model: FakeOpenAI
) -> None:
    bot = agent(owner, name=unique("Watched"))
    with Guest(usage_server, owner, name=unique("Ola ")) as ola:
        room = channel(owner, [bot], memberIds=[ola.id])
        reply(fake_model, owner, ola.api, room, bot, (10, 10))
        spent = {"total": {"monthlyTokens": 1}, "guests": {ola.id: {"monthlyTokens": 20}}}
        owner.ok("PUT", "/api/settings", json={"budgets": spent})
        page = browse.page(server=usage_server)
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url))
        log_in(page, ola.key, f"/c/{room['id']}")
        expect(page.get_by_role("link", name="Agents & settings")).to_have_count(0)
        for path in ("/admin/usage", "/admin/audit"):
            page.goto(path)
            expect(page.get_by_role("heading", name="Nothing here")).to_be_visible()
            expect(page.get_by_role("heading", name="Usage")).to_have_count(0)
        page.goto(f"/c/{room['id']}")
        page.locator("[data-testid=message-list][aria-busy=false]").wait_for()
        expect(page.get_by_test_id("budget-warning")).to_have_count(0)
        assert not [u for u in asked if "/api/usage" in u or "/api/settings" in u], asked
        assert ola.api.get("/api/usage").status_code == 403


def _backfill(server: Server, rows: list[tuple[str, str, str, str, str, int, int, float]]) -> None:
    """Earlier days of use, written into the rollup the report reads (as an operator with a
    shell could): the ledger only ever writes the present."""
    sums = ("input_tokens", "output_tokens", "cost", "calls", "unpriced_calls")
    for day, agent_id, user_id, channel_id, model, tokens_in, tokens_out, cost in rows:
        calls = max(1, tokens_in // 1500)
        keys = (
            ("agent", agent_id),
            ("person", user_id),
            ("channel", channel_id),
            ("model", model),
            ("total", ""),
        )
        for dimension, key in keys:
            sql(
                server,
                f"INSERT INTO usage_rollup (day, dimension, key, {', '.join(sums)})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dimension, key, day) DO UPDATE SET "
                + ", ".join(f"{n} = {n} + excluded.{n}" for n in sums),
                day,
                dimension,
                key,
                tokens_in,
                tokens_out,
                cost,
                calls,
                0 if cost else calls,
            )


def test_the_usage_screen_is_accessible_and_pictured(
    browse: Browse,
    fresh_server: Server,
    fake_model: FakeOpenAI,
    searxng: FakeSearchServer,
    shoot: Shot,
) -> None:
    """On a server of its own, so the pictures hold this scene only."""
    usage_server = fresh_server
    usage_server.start()
    owner = usage_server.login()
    configure(owner, fake_model, searxng)
    owner.ok("PUT", "/api/settings", json={"prices": {PRICED: PRICE}})
    researcher = agent(owner, name="Researcher", avatar="🔎")
    writer = agent(owner, name="Writer", avatar="✍️", model="fake/gpt-mini")
    with Guest(usage_server, owner, name="Maya") as maya:
        room = channel(owner, [researcher, writer], name="launch-plan", memberIds=[maya.id])
        me = owner.ok("GET", "/api/me")["user"]["id"]
        today = datetime.now(UTC).date()
        history = []
        for back in range(1, 29):
            day = (today - timedelta(days=back)).isoformat()
            wave = 1 + (back * 7 % 5)
            tokens_in = 9000 + wave * 5200 + (4000 if back % 7 in (2, 3) else 0)
            history.append(
                (
                    day,
                    researcher["id"],
                    me,
                    room["id"],
                    PRICED,
                    tokens_in,
                    tokens_in // 6,
                    (tokens_in * 3 + tokens_in // 6 * 15) / 1e6,
                )
            )
            if back % 3:
                history.append(
                    (
                        day,
                        writer["id"],
                        maya.id,
                        room["id"],
                        "fake/gpt-mini",
                        4000 * wave,
                        900 * wave,
                        0,
                    )
                )
        _backfill(usage_server, history)
        reply(fake_model, owner, owner, room, researcher, (12_000, 1_800))
        reply(fake_model, owner, maya.api, room, writer, (6_000, 1_100))
        spent = {
            r["key"]: r["inputTokens"] + r["outputTokens"]
            for group in ("agent", "person")
            for r in owner.ok("GET", "/api/usage", params={"groupBy": group})["rows"]
        }
        owner.ok(
            "PUT",
            "/api/settings",
            json={
                "budgets": {
                    "agents": {
                        researcher["id"]: {
                            "monthlyTokens": int(round(spent[researcher["id"]] / 0.86, -3))
                        }
                    },
                    "guests": {maya.id: {"monthlyTokens": int(round(spent[maya.id] / 0.55, -3))}},
                    "total": {"monthlyCost": 50},
                }
            },
        )

        page = browse.page(server=usage_server)
        log_in(page, usage_server.owner_key, "/admin/usage")
        page.get_by_role("button", name="Last 30 days").click()
        expect(
            page.get_by_role("tabpanel").get_by_role("row").filter(has_text="Researcher")
        ).to_be_visible()
        expect(page.get_by_test_id("budget").filter(has_text="Researcher")).to_contain_text(
            "Over 80%"
        )
        accessible_and_pictured(page, shoot, "admin-usage")
        page.set_viewport_size(DESKTOP)
        page.get_by_role("heading", name="Budgets this month").scroll_into_view_if_needed()
        page.wait_for_timeout(100)
        shoot(page, "admin-usage-budgets-desktop-light")
        page.emulate_media(color_scheme="dark")
        page.wait_for_timeout(100)
        shoot(page, "admin-usage-budgets-desktop-dark")
        page.emulate_media(color_scheme="light")

        # Forced colours: the two agents' parts of the bars are told apart by their hatching.
        page.emulate_media(forced_colors="active")
        fills = page.evaluate(
            """[...new Set([...document.querySelectorAll('svg[role=img]')[0].querySelectorAll(
                'rect.part')].map((r) => getComputedStyle(r).fill))]"""
        )
        assert len(fills) == 2 and all(f.startswith("url(") for f in fills), fills
        shoot(page, "admin-usage-budgets-desktop-forced-colors")
        page.get_by_role("group", name="Split the charts").scroll_into_view_if_needed()
        page.wait_for_timeout(100)
        shoot(page, "admin-usage-charts-desktop-forced-colors")
        page.emulate_media(forced_colors="none")

        page.goto(f"/c/{room['id']}")
        expect(page.get_by_test_id("budget-warning")).to_contain_text("Researcher")
        page.mouse.move(0, 0)
        shoot(page, "budget-warning-desktop-light")
        page.set_viewport_size(PHONE)
        page.wait_for_timeout(150)
        shoot(page, "budget-warning-phone-light")
    owner.close()
