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

FAST_DOCUMENTS: tuple[str, ...] = (
    "bike-repair.md",
    "motorcycle-chain-and-brakes.txt",
    "orchard-handbook.md",
    "orchard-ci-manual.md",
    "sourdough.md",
    "note-starter-feeding.txt",
    "car-starter-motor.txt",
    "runbook.md",
    "billing-runbook.md",
    "boiler-manual.pdf",
)
"""The test suite's slice: ten documents chosen in pairs that share words but not meaning
(bicycle and motorcycle chains, an apple orchard and a CI service named Orchard, a sourdough
starter and a car's starter motor, two teams' runbooks), plus a PDF."""

FAST_QUESTIONS: tuple[str, ...] = (
    "q002", "q003", "q009", "q010", "q013", "q015", "q019", "q021", "q022", "q024",
    "q025", "q030", "q031", "q033", "q036", "q039", "q053", "q054", "q060", "q065",
    "q124", "q128", "q131", "q134", "q136", "q299", "q301", "q369", "q377", "q383",
    "q390", "q397",
)  # fmt: skip
"""Questions answered inside FAST_DOCUMENTS, of every kind, and two with no answer there."""


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


def load_questions(ids: tuple[str, ...] | None = None) -> list[Question]:
    """All questions in file order, or those with the given ids."""
    questions = []
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if ids is not None and row["id"] not in ids:
            continue
        judgements = tuple(Judgement(j["doc"], j["span"], j["grade"]) for j in row["judgements"])
        questions.append(Question(row["id"], row["kind"], row["question"], judgements))
    return questions


def source_texts() -> dict[str, str]:
    """Each document's text as written: what the judgements' spans are checked against."""
    texts = {path.name: path.read_text(encoding="utf-8") for path in sorted(DOCS.iterdir())}
    for path in sorted(PDF_SOURCES.glob("*.txt")):
        texts[f"{path.stem}.pdf"] = path.read_text(encoding="utf-8").replace(PAGE_BREAK, "\n")
    return texts


def load_documents(names: tuple[str, ...] | None = None) -> dict[str, bytes]:
    """The files to upload, by name: text files as stored, PDFs typeset from their sources."""
    files = {path.name: path.read_bytes() for path in sorted(DOCS.iterdir())}
    for path in sorted(PDF_SOURCES.glob("*.txt")):
        pages = [page.strip() for page in path.read_text(encoding="utf-8").split(PAGE_BREAK)]
        files[f"{path.stem}.pdf"] = typeset(pages)
    if names is not None:
        files = {name: files[name] for name in names}
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
