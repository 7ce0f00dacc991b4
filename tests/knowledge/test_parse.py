"""Kinds are told apart by content as well as by name; unreadable PDFs say why."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaver.knowledge.parse import (
    UnreadableDocument,
    UnsupportedDocument,
    detect_kind,
    parse_document,
)
from tests.knowledge.helpers import make_pdf

MARKDOWN = "# Guide\n\nSome intro.\n\n## Install\n\nRun `pip install palaver`.\n"


def test_pdf_text_keeps_page_numbers() -> None:
    data = make_pdf(["First page about apples.", "", "Third page about cherries."])
    doc = parse_document("fruit.pdf", data)
    assert doc.kind == "pdf"
    assert doc.page_count == 3
    assert [p.number for p in doc.pages] == [1, 3]
    assert "apples" in doc.pages[0].text
    assert "cherries" in doc.pages[1].text


def test_pdf_is_recognised_by_content_whatever_its_name() -> None:
    assert detect_kind("upload.bin", make_pdf(["hello"])) == "pdf"
    assert detect_kind("notes.txt", make_pdf(["hello"])) == "pdf"


def test_markdown_by_name_and_by_structure() -> None:
    assert detect_kind("guide.md", b"just a line") == "markdown"
    assert detect_kind("guide.markdown", b"just a line") == "markdown"
    assert detect_kind("README", MARKDOWN.encode()) == "markdown"
    assert detect_kind("notes.txt", MARKDOWN.encode()) == "markdown"


def test_plain_text_stays_text_despite_a_stray_hash() -> None:
    text = "Shopping list\n\nEggs, milk and #1 coffee.\nCall Bob at 5.\n"
    assert detect_kind("list.txt", text.encode()) == "text"
    doc = parse_document("list.txt", text.encode())
    assert doc.kind == "text" and doc.page_count is None
    assert doc.pages[0].number is None and "coffee" in doc.pages[0].text


def test_utf8_bom_and_crlf_are_normalised() -> None:
    doc = parse_document("a.txt", "\ufeffline one\r\nline two\r\n".encode())
    assert doc.pages[0].text == "line one\nline two\n"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("photo.png", b"\x89PNG\r\n\x1a\n" + bytes(64)),
        ("photo.jpg", b"\xff\xd8\xff\xe0" + bytes(64)),
        ("report.docx", b"PK\x03\x04" + bytes(64)),
        ("blob", bytes(range(256))),
        ("latin1.txt", "café crème".encode("latin-1")),
        ("page.html", b"<html><body>Hello</body></html>"),
        ("data.json", b'{"a": 1}'),
    ],
)
def test_other_kinds_are_unsupported(name: str, data: bytes) -> None:
    with pytest.raises(UnsupportedDocument) as caught:
        parse_document(name, data)
    assert caught.value.status == 415


def test_password_protected_pdf_is_unreadable_and_says_why() -> None:
    data = make_pdf(["Top secret plans."], user_password="hunter2")
    with pytest.raises(UnreadableDocument, match="encrypted") as caught:
        parse_document("secret.pdf", data)
    assert caught.value.status == 400


def test_pdf_encrypted_without_a_user_password_is_read() -> None:
    data = make_pdf(["Open to all readers."], user_password="")
    assert "readers" in parse_document("open.pdf", data).pages[0].text


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("broken.pdf", b"%PDF-1.7\n1 0 obj garbage", "cannot be read"),
        ("fake.pdf", b"this is not a pdf at all", "not a PDF"),
        ("scan.pdf", make_pdf(["", ""]), "no extractable text"),
        ("empty.txt", b"   \n\n  ", "no text"),
    ],
)
def test_unreadable_documents_name_the_reason(name: str, data: bytes, reason: str) -> None:
    with pytest.raises(UnreadableDocument, match=reason):
        parse_document(name, data)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(["a.pdf", "a.md", "a.txt", "a", "a.png"]), data=st.binary(max_size=300))
def test_any_bytes_parse_or_fail_with_a_document_error(name: str, data: bytes) -> None:
    try:
        doc = parse_document(name, data)
    except (UnsupportedDocument, UnreadableDocument):
        return
    assert doc.pages and all(p.text.strip() for p in doc.pages)


@settings(max_examples=50, deadline=None)
@given(tail=st.binary(max_size=400))
def test_mangled_pdfs_fail_cleanly(tail: bytes) -> None:
    with contextlib.suppress(UnreadableDocument):
        parse_document("x.pdf", b"%PDF-1.4\n" + tail)
