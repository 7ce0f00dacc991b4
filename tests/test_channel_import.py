"""Imports (issue 25): Slack's workspace export, a channel that fails leaving nothing of itself
(a malformed entry, a damaged file; a server killed mid-write is in test_faults_kill.py), files
of no known format, the limits, and readers that refuse odd input with a reason rather than
crash."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaver.errors import Invalid, UnsupportedMedia
from palaver.transfer import palaver_import
from palaver.transfer.model import ChannelFailure
from palaver.transfer.prepare import Directory, prepare
from palaver.transfer.slack_import import SlackExport, slack_emoji
from palaver.transfer.unpack import Unpacker
from tests.channel_files import channel_named, everything, import_file, imported, zipped
from tests.support import Api, Guest, Server, files_under, new_agent, unique


def slack_export(guest_name: str, agent_name: str, stranger: str) -> dict[str, Any]:
    """A workspace export in Slack's documented layout."""
    users = [
        {"id": "U1", "name": "g", "real_name": guest_name, "profile": {"real_name": guest_name}},
        {"id": "U2", "name": "s", "profile": {"display_name": stranger, "real_name": "S"}},
        {"id": "U3", "name": "bot", "profile": {"real_name": agent_name}},
    ]
    channels = [
        {"id": "C1", "name": "general", "created": 1704153600, "members": ["U1", "U2"]},
        {"id": "C2", "name": "random", "created": 1704153600, "members": ["U1"]},
    ]
    general = [
        {
            "type": "message",
            "subtype": "channel_join",
            "user": "U2",
            "text": "<@U2> joined",
            "ts": "1704186000.000100",
        },
        {
            "type": "message",
            "user": "U1",
            "text": "Hello <@U2>, see <https://example.org|the site> &amp; more",
            "ts": "1704186060.000200",
            "thread_ts": "1704186060.000200",
            "reply_count": 1,
            "reactions": [
                {"name": "+1", "users": ["U1", "U2"], "count": 2},
                {"name": "partyparrot", "users": ["U2"], "count": 1},
            ],
        },
        {
            "type": "message",
            "user": "U2",
            "text": "A reply in the thread",
            "ts": "1704186120.000300",
            "thread_ts": "1704186060.000200",
            "reactions": [{"name": "tada", "users": ["U3"], "count": 1}],
        },
        {
            "type": "message",
            "user": "U3",
            "text": "",
            "ts": "1704186180.000400",
            "files": [
                {
                    "id": "F1",
                    "name": "report.pdf",
                    "title": "Report",
                    "url_private": "https://files.slack.com/files-pri/T1-F1/report.pdf",
                }
            ],
        },
        {"type": "message", "user": "U9", "text": "Who am I?", "ts": "1704186240.000500"},
    ]
    return {
        "users.json": users,
        "channels.json": channels,
        "general/2024-01-02.json": general,
        "random/2024-01-03.json": [
            {"type": "message", "user": "U2", "text": "Over here", "ts": "1704272400.000100"},
        ],
    }


def test_a_slack_export_imports_with_threads_reactions_and_a_report_of_what_it_left(
    server: Server, owner: Api
) -> None:
    agent = new_agent(owner)
    stranger = unique("Grace ")
    with Guest(server, owner) as guest:
        files = slack_export(guest.user["name"], agent["name"], stranger)
        files["channels.json"][0]["name"] = general = unique("general-")
        files["channels.json"][1]["name"] = random = unique("random-")
        files[f"{general}/2024-01-02.json"] = files.pop("general/2024-01-02.json")
        files[f"{random}/2024-01-03.json"] = files.pop("random/2024-01-03.json")
        report = imported(owner, zipped(files))
    assert [c["name"] for c in report["channels"]] == [general, random]
    assert report["imported"] == 5
    skipped = {s["what"]: s["why"] for s in report["skipped"]}
    assert "notice" in skipped[f"#{general}: 1 message(s) of subtype channel_join"]
    assert "url_private" in skipped[f"#{general}: file 'report.pdf' (message 1704186180.000400)"]
    assert (
        "custom emoji" in skipped[f"#{general}: reaction :partyparrot: (message 1704186060.000200)"]
    )
    assert "users.json" in skipped["user U9"]
    messages = everything(owner, report["channels"][0]["id"])
    root, reply, shared, lost = messages
    assert root["userId"] == guest.id
    assert root["content"] == f"Hello @{stranger}, see [the site](https://example.org) & more"
    assert root["createdAt"] == "2024-01-02T09:01:00.000Z"
    assert root["reactions"] == [{"emoji": "👍", "count": 1, "userIds": [guest.id]}]
    assert root["metadata"]["importedReactions"] == [{"emoji": "👍", "names": [stranger]}]
    assert root["thread"]["replyCount"] == 1
    assert reply["threadId"] == root["id"]
    assert reply["metadata"]["importedAuthor"] == stranger
    assert reply["reactions"] == [{"emoji": "🎉", "count": 1, "userIds": [agent["id"]]}]
    assert shared["agentId"] == agent["id"]
    assert shared["content"] == "📎 report.pdf"
    assert shared["metadata"]["importedFiles"][0]["name"] == "report.pdf"
    assert lost["metadata"]["importedAuthor"] == "U9"
    (elsewhere,) = everything(owner, report["channels"][1]["id"])
    assert elsewhere["content"] == "Over here"


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("+1", "👍"),
        ("thumbsup", "👍"),
        ("tada", "🎉"),
        ("wave::skin-tone-3", "👋🏼"),
        ("white_check_mark", "✅"),
        ("partyparrot", None),
        ("", None),
    ],
)
def test_slack_reaction_names_become_unicode_emoji(name: str, found: str | None) -> None:
    assert slack_emoji(name) == found


def test_a_broken_channel_is_not_imported_at_all_and_the_others_are(owner: Api) -> None:
    first, second = unique("fine-"), unique("broken-")
    files = {
        "users.json": [{"id": "U1", "name": "someone"}],
        "channels.json": [{"id": "C1", "name": first}, {"id": "C2", "name": second}],
        f"{first}/2024-01-02.json": [
            {"type": "message", "user": "U1", "text": "fine", "ts": "1704186000.000100"}
        ],
        f"{second}/2024-01-02.json": [
            {"type": "message", "user": "U1", "text": "kept?", "ts": "1704186000.000100"}
        ],
        f"{second}/2024-01-03.json": '[{"type": "message", "text": ',
    }
    report = imported(owner, zipped(files))
    assert [c["name"] for c in report["channels"]] == [first]
    (failure,) = [s for s in report["skipped"] if s["what"] == f"channel '{second}'"]
    assert "2024-01-03.json is not valid JSON" in failure["why"]
    assert channel_named(owner, first) and not channel_named(owner, second)


def test_an_invalid_message_in_the_middle_leaves_nothing_of_its_channel(owner: Api) -> None:
    name, word = unique("half-"), unique("walrus")
    good = {
        "id": "a",
        "userId": None,
        "content": f"first {word}",
        "createdAt": "2021-01-01T00:00:00Z",
    }
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": {"name": name, "type": "group"},
        "people": [],
        "files": [],
        "messages": [
            good,
            {**good, "id": "b", "content": "second"},
            {**good, "id": "c", "type": "poem"},
            {**good, "id": "d", "content": "fourth"},
        ],
    }
    report = imported(owner, json.dumps(document).encode(), "c.json")
    assert report["channels"] == [] and report["imported"] == 0
    (failure,) = report["skipped"]
    assert failure["what"] == f"channel '{name}'"
    assert failure["why"].startswith("Message 3: its type must be one of")
    assert not channel_named(owner, name)
    assert owner.ok("GET", "/api/search", params={"q": word})["results"] == []


def test_a_channel_whose_second_file_is_damaged_leaves_neither_file_behind(
    server: Server, owner: Api
) -> None:
    name = unique("damaged-")
    files = [
        {"url": "/uploads/2024-01/a-0123abcd.txt", "path": "files/a.txt", "size": 5},
        {"url": "/uploads/2024-01/b-0123abcd.txt", "path": "files/b.txt", "size": 3},
    ]
    message = {
        "id": "m",
        "content": "see /uploads/2024-01/a-0123abcd.txt and /uploads/2024-01/b-0123abcd.txt",
        "createdAt": "2024-01-05T10:00:00Z",
    }
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": {"name": name, "type": "group"},
        "files": files,
        "messages": [message],
    }
    archive = zipped(
        {"channel.json": document, "files/a.txt": b"first", "files/b.txt": b"more than three"}
    )
    uploads = server.data_dir / "uploads"
    before = files_under(uploads)
    report = imported(owner, archive)
    assert report["channels"] == []
    (failure,) = report["skipped"]
    assert "files/b.txt holds more than the 3 bytes it states" in failure["why"]
    assert files_under(uploads) == before
    assert not channel_named(owner, name)


@pytest.mark.parametrize(
    ("data", "status", "words"),
    [
        (b"", 400, "empty"),
        (b"hello, this is text", 415, "neither JSON nor a zip"),
        (b'{"format": "palaver.channel", "version": 1,', 400, "not valid JSON"),
        (b'{"hello": "world"}', 415, "not a Palaver channel export"),
        (b"[1, 2, 3]", 415, "not a Palaver channel export"),
        (b'{"format": "palaver.channel", "version": 2}', 415, "version 2"),
        (b'{"format": "palaver.channel", "version": 1}', 400, "no 'channel'"),
        (b'{"format": "palaver.channel", "version": 1, "channel": []}', 400, "no 'channel'"),
        (
            b'{"format": "palaver.channel", "version": 1, "channel": {"name": "x", "type": "dm"}}',
            400,
            "no 'messages'",
        ),
        (b"PK\x03\x04 but nothing of a zip after", 400, "cannot be read as one"),
        (zipped({"notes.txt": "hello"}), 415, "no export this server knows"),
        (zipped({"channel.md": "# a transcript"}), 415, "Markdown transcript"),
        (zipped({"channel.json": "{"}), 400, "not valid JSON"),
        (zipped({"channels.json": {"a": 1}}), 400, "channels.json is not a list"),
    ],
)
def test_a_file_of_no_known_format_or_malformed_is_refused_with_why(
    owner: Api, data: bytes, status: int, words: str
) -> None:
    before = len(owner.ok("GET", "/api/channels")["channels"])
    response = import_file(owner, data, "upload.bin", "application/octet-stream")
    assert response.status_code == status, response.text
    assert words in response.json()["error"]
    assert len(owner.ok("GET", "/api/channels")["channels"]) == before


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
"""Any JSON value, small."""
IDS = st.sampled_from(["a", "b", "user_x", "agent_y"]) | JSON
TIMES = st.sampled_from(["2020-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31"]) | JSON
PALAVER_MESSAGE = st.fixed_dictionaries(
    {},
    optional={
        "id": IDS,
        "type": st.sampled_from(["text", "tool_call"]) | JSON,
        "content": st.just("hi") | JSON,
        "deleted": JSON,
        "metadata": JSON,
        "threadId": IDS,
        "createdAt": TIMES,
        "editedAt": TIMES,
        "userId": IDS,
        "agentId": IDS,
        "reactions": st.lists(
            st.fixed_dictionaries(
                {}, optional={"emoji": st.sampled_from(["👍", "x"]) | JSON, "userIds": JSON}
            )
            | JSON,
            max_size=2,
        )
        | JSON,
    },
)


@settings(max_examples=300)
@given(
    channel=st.fixed_dictionaries(
        {},
        optional={
            "name": st.just("a") | JSON,
            "type": st.sampled_from(["dm", "group"]) | JSON,
            "agentIds": st.lists(IDS, max_size=2) | JSON,
        },
    )
    | JSON,
    people=st.lists(
        st.fixed_dictionaries(
            {}, optional={"id": IDS, "kind": st.sampled_from(["person", "agent"]), "name": JSON}
        )
        | JSON,
        max_size=2,
    )
    | JSON,
    files=st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "url": st.just("/uploads/2024-01/a.txt") | JSON,
                "path": JSON,
                "size": st.integers(-1, 10) | JSON,
            },
        )
        | JSON,
        max_size=2,
    )
    | JSON,
    messages=st.lists(PALAVER_MESSAGE | JSON, max_size=4) | JSON,
)
def test_any_palaver_document_is_read_or_refused_with_a_reason_never_a_crash(
    channel: Any, people: Any, files: Any, messages: Any
) -> None:
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": channel,
        "people": people,
        "files": files,
        "messages": messages,
    }
    try:
        found = palaver_import.read(document, 1000)
    except (Invalid, UnsupportedMedia, ChannelFailure) as refused:
        assert str(refused)
        return
    prepare(found, "ch_x", Directory.of([("user_x", "a")], [("agent_y", "b")]), {}, [])


SLACK_MESSAGE = st.fixed_dictionaries(
    {"ts": st.sampled_from(["1704186000.000100", "1704186001.5"]) | JSON},
    optional={
        "type": JSON,
        "subtype": st.sampled_from(["bot_message", "tombstone", "channel_join"]) | JSON,
        "user": st.sampled_from(["U1", "U2"]) | JSON,
        "text": st.sampled_from(["<@U1> <#C1|c> <http://x|y> &amp;", "<!here>"]) | JSON,
        "thread_ts": st.sampled_from(["1704186000.000100"]) | JSON,
        "reactions": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "name": st.sampled_from(["+1", "wave::skin-tone-9"]) | JSON,
                    "users": JSON,
                },
            )
            | JSON,
            max_size=2,
        )
        | JSON,
        "files": st.lists(
            st.fixed_dictionaries({}, optional={"name": JSON, "url_private": JSON}) | JSON,
            max_size=2,
        )
        | JSON,
        "edited": st.fixed_dictionaries({}, optional={"ts": JSON}) | JSON,
        "user_profile": JSON,
        "bot_id": JSON,
        "bot_profile": JSON,
        "username": JSON,
    },
)


@settings(max_examples=300)
@given(
    entries=st.lists(SLACK_MESSAGE | JSON, max_size=4) | JSON,
    users=st.lists(
        st.fixed_dictionaries(
            {"id": st.just("U1") | JSON}, optional={"profile": JSON, "name": JSON, "is_bot": JSON}
        )
        | JSON,
        max_size=2,
    )
    | JSON,
    channels=st.just([{"id": "C1", "name": "c"}])
    | st.lists(
        st.fixed_dictionaries({"id": JSON}, optional={"name": JSON, "members": JSON}) | JSON,
        max_size=2,
    )
    | JSON,
)
def test_any_slack_channel_is_read_or_refused_with_a_reason_never_a_crash(
    entries: Any, users: Any, channels: Any
) -> None:
    files = {
        "users.json": users,
        "dms.json": channels,
        "channels.json": channels,
        "c/2024-01-02.json": entries,
    }
    archive = zipfile.ZipFile(io.BytesIO(zipped(files)))
    try:
        export = SlackExport(Unpacker(archive, 10**6, 10**7), "", 1000)
        for conversation in export.conversations():
            try:
                found = export.read(conversation)
            except ChannelFailure as refused:
                assert str(refused)
                continue
            prepare(found, "ch_x", Directory.of([("user_x", "a")], []), {}, [])
    except Invalid as refused:
        assert str(refused)


def test_an_import_larger_than_the_upload_limit_is_413_and_so_is_a_zip_that_unpacks_huge(
    owner: Api,
) -> None:
    limits = owner.ok("GET", "/api/settings")["settings"]["limits"]
    owner.ok("PUT", "/api/settings", json={"limits": {"maxUploadBytes": 4000}})
    try:
        response = import_file(owner, b"{" + b" " * 5000 + b"}", "big.json")
        assert response.status_code == 413, response.text
        assert "limit" in response.json()["error"]
        bomb = zipped({"channel.json": b" " * 3_000_000})
        assert len(bomb) < 4000
        response = import_file(owner, bomb)
        assert response.status_code == 413, response.text
        assert "unpacks to" in response.json()["error"]
    finally:
        owner.ok("PUT", "/api/settings", json={"limits": limits})
