"""Chunks follow the document's structure, stay near 400 tokens and overlap by about 15%."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from palaver.knowledge.chunk import (
    OVERLAP_TOKENS,
    TARGET_TOKENS,
    Chunk,
    chunk_context,
    chunk_document,
    count_tokens,
    document_title,
    embedding_text,
)
from palaver.knowledge.parse import Page, ParsedDocument, parse_document
from tests.knowledge.helpers import make_pdf

SENTENCE = "The gateway retries a failed delivery with exponential backoff and jitter."


def markdown(text: str) -> ParsedDocument:
    return ParsedDocument("markdown", (Page(None, text),), None)


def long_section(paragraphs: int, sentences: int = 6) -> str:
    return "\n\n".join(
        " ".join(f"{SENTENCE[:-1]} number {p}-{s}." for s in range(sentences))
        for p in range(paragraphs)
    )


def test_tokens_are_counted_with_the_models_word_pieces() -> None:
    assert count_tokens(["hello world", "tokenization", ""]) == [2, 2, 0]


def test_markdown_sections_carry_their_heading_path() -> None:
    text = (
        "Preface without heading.\n\n"
        "# Guide\n\nIntro.\n\n"
        "## Install\n\nRun the installer.\n\n"
        "### On Linux\n\nUse the package.\n\n"
        "## Configure ##\n\nEdit the file.\n\n"
        "Setext Part\n===========\n\nA new part.\n"
    )
    chunks = chunk_document(markdown(text))
    assert [(c.heading_path, c.content) for c in chunks] == [
        ((), "Preface without heading."),
        (("Guide",), "Intro."),
        (("Guide", "Install"), "Run the installer."),
        (("Guide", "Install", "On Linux"), "Use the package."),
        (("Guide", "Configure"), "Edit the file."),
        (("Setext Part",), "A new part."),
    ]
    assert [c.ordinal for c in chunks] == list(range(6))


def test_fenced_code_is_one_paragraph_and_its_hashes_are_not_headings() -> None:
    text = "# Script\n\n```bash\n# install\n\nmake install\n```\n\nDone.\n"
    (chunk,) = chunk_document(markdown(text))
    assert chunk.heading_path == ("Script",)
    assert chunk.content == "```bash\n# install\n\nmake install\n```\n\nDone."


def test_long_sections_split_near_the_target_with_overlap() -> None:
    chunks = chunk_document(markdown("# Ops\n\n" + long_section(12)))
    assert len(chunks) >= 3
    for chunk in chunks:
        assert chunk.heading_path == ("Ops",)
        assert TARGET_TOKENS // 2 <= chunk.tokens <= TARGET_TOKENS or chunk is chunks[-1]
        assert count_tokens([chunk.content])[0] <= TARGET_TOKENS
    for before, after in itertools.pairwise(chunks):
        shared = _overlap(before.content, after.content)
        assert shared, "consecutive chunks of a section share their boundary sentences"
        assert 0 < count_tokens([shared])[0] <= OVERLAP_TOKENS


def test_chunks_prefer_to_end_at_a_paragraph() -> None:
    chunks = chunk_document(markdown(long_section(12)))
    for chunk in chunks[:-1]:
        assert chunk.content.endswith("-5."), "the last sentence of a paragraph closes a chunk"


def test_sections_and_pages_are_never_merged() -> None:
    doc = parse_document("manual.pdf", make_pdf(["Page one text.", "Page two text."] * 2))
    chunks = chunk_document(doc)
    assert [(c.page, c.content) for c in chunks] == [
        (1, "Page one text."),
        (2, "Page two text."),
        (3, "Page one text."),
        (4, "Page two text."),
    ]


def test_a_run_on_sentence_is_cut_between_tokens() -> None:
    words = " ".join(f"word{i}" for i in range(600))
    chunks = chunk_document(ParsedDocument("text", (Page(None, words),), None))
    assert len(chunks) >= 2
    assert all(count_tokens([c.content])[0] <= TARGET_TOKENS for c in chunks)
    assert "word0 " in chunks[0].content and chunks[-1].content.endswith("word599")


def test_embedding_text_leads_with_the_title_and_heading_path() -> None:
    chunk = Chunk(0, "Run it.", ("Guide", "Install"), None, 3)
    context = chunk_context(document_title("tea-kettle_manual.md"), chunk.heading_path)
    assert context == "tea kettle manual > Guide > Install"
    assert embedding_text(context, chunk.content) == f"{context}\nRun it."
    assert embedding_text("", "Run it.") == "Run it."


def _overlap(before: str, after: str) -> str:
    for size in range(min(len(before), len(after)), 0, -1):
        if before.endswith(after[:size]):
            return after[:size]
    return ""


words = st.text(alphabet="abcdefghij", min_size=1, max_size=12)
sentences = st.lists(words, min_size=1, max_size=40).map(lambda ws: " ".join(ws) + ".")
paragraphs = st.lists(sentences, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(paragraphs, min_size=1, max_size=15))
def test_every_word_lands_in_a_chunk_of_bounded_size(parts: list[str]) -> None:
    text = "\n\n".join(parts)
    chunks = chunk_document(ParsedDocument("text", (Page(None, text),), None))
    assert all(c.tokens <= TARGET_TOKENS for c in chunks)
    joined = " ".join(c.content for c in chunks).split()
    assert set(text.split()) <= set(joined)
