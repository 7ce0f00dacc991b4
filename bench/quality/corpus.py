"""The quality set's documents and questions, read from this directory.

Text and Markdown documents are stored as they are uploaded. PDF documents are kept as text
(`pdf/<name>.txt`, pages separated by a `--- page ---` line) and typeset with fpdf2 when the
corpus is loaded, so the repository holds no binary files and the PDFs cannot drift from the
text the judgements quote. The typesetting is deterministic: same text, same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

HERE = Path(__file__).parent
DOCS = HERE / "docs"
PDF_SOURCES = HERE / "pdf"
QUESTIONS = HERE / "questions.jsonl"
PAGE_BREAK = "--- page ---"

Kind = Literal["keyword", "paraphrase", "title", "multihop", "noanswer"]
KINDS: tuple[Kind, ...] = ("keyword", "paraphrase", "title", "multihop", "noanswer")

FAST_EVERY = 5
"""The test suite's slice: every fifth document in name order, with every question they answer
and every question without an answer. A sample by rule, so that it is neither tuned to a result
nor built from the word-sharing pairs (see docs/NOTES.md for what a slice of pairs measures)."""


@dataclass(frozen=True)
class Judgement:
    document: str
    span: str
    """A quotation of the answer-bearing sentence (or its core): a retrieved chunk of
    `document` is relevant when it holds this text, which survives any re-chunking."""
    grade: int
    """2: the passage answers the question; 1: it is related or answers part of it."""


@dataclass(frozen=True)
class Question:
    id: str
    kind: Kind
    text: str
    judgements: tuple[Judgement, ...]
    """Empty for a question the corpus cannot answer."""


def load_questions(fast: bool = False) -> list[Question]:
    """All questions in file order; with `fast`, those of the test suite's slice."""
    chosen = fast_documents()
    questions = []
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        judgements = tuple(Judgement(j["doc"], j["span"], j["grade"]) for j in row["judgements"])
        if fast and not all(j.document in chosen for j in judgements):
            continue
        questions.append(Question(row["id"], row["kind"], row["question"], judgements))
    return questions


def source_texts() -> dict[str, str]:
    """Each document's text as written: what the judgements' spans are checked against."""
    texts = {path.name: path.read_text(encoding="utf-8") for path in sorted(DOCS.iterdir())}
    for path in sorted(PDF_SOURCES.glob("*.txt")):
        texts[f"{path.stem}.pdf"] = path.read_text(encoding="utf-8").replace(PAGE_BREAK, "\n")
    return texts


def document_names() -> list[str]:
    names = [path.name for path in DOCS.iterdir()]
    return sorted(names + [f"{path.stem}.pdf" for path in PDF_SOURCES.glob("*.txt")])


def fast_documents() -> tuple[str, ...]:
    return tuple(document_names()[::FAST_EVERY])


def load_documents(fast: bool = False) -> dict[str, bytes]:
    """The files to upload, by name: text files as stored, PDFs typeset from their sources;
    with `fast`, those of the test suite's slice."""
    files = {path.name: path.read_bytes() for path in sorted(DOCS.iterdir())}
    for path in sorted(PDF_SOURCES.glob("*.txt")):
        pages = [page.strip() for page in path.read_text(encoding="utf-8").split(PAGE_BREAK)]
        files[f"{path.stem}.pdf"] = typeset(pages)
    if fast:
        files = {name: files[name] for name in fast_documents()}
    return files


def typeset(pages: list[str]) -> bytes:
    """One PDF page per item, paragraphs kept apart by a blank line."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))
    pdf.set_font("helvetica", size=11)
    for page in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, page)
    return bytes(pdf.output())
