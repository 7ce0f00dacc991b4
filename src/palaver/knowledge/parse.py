"""Tell an uploaded document's kind from its bytes and name, and extract its text.

Content decides first: a `%PDF-` header makes a PDF whatever the name, and text must decode
as UTF-8 without control bytes. The name then separates Markdown from plain text (or the
text's own Markdown structure does) and rejects files that are text but another format
(HTML, JSON, source code). Parsing is CPU work: call `parse_document` in a worker thread.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from palaver.errors import Invalid, UnsupportedMedia

log = logging.getLogger(__name__)

Kind = Literal["pdf", "markdown", "text"]

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mkdn"})
TEXT_SUFFIXES = frozenset({".txt", ".text", ""})

_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\xd0\xcf\x11\xe0", "an old Office document"),
    (b"{\\rtf", "an RTF document"),
    (b"\x7fELF", "a program"),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_MARKDOWN_LINE = re.compile(
    r"^(?: {0,3}#{1,6}\s+\S|```|~~~| {0,3}(?:=+|-+)\s*$|\s*[-*+]\s+\[[ xX]\]\s)", re.MULTILINE
)
_MARKDOWN_INLINE = re.compile(r"\[[^\]\n]+\]\([^)\s]+\)|\*\*[^*\n]+\*\*|`[^`\n]+`")


class UnsupportedDocument(UnsupportedMedia):
    """Not a PDF, Markdown or plain-text document (maps to 415)."""


class UnreadableDocument(Invalid):
    """A supported kind whose text cannot be read: encrypted, corrupt or empty (maps to 400)."""


@dataclass(frozen=True)
class Page:
    number: int | None
    """1-based page number for PDFs; None for text and Markdown, which have no pages."""
    text: str


@dataclass(frozen=True)
class ParsedDocument:
    kind: Kind
    pages: tuple[Page, ...]
    page_count: int | None
    """Pages in the PDF, counting pages without text; None for other kinds."""


def parse_document(filename: str, data: bytes) -> ParsedDocument:
    """Detect the kind and extract the text; raises UnsupportedDocument or UnreadableDocument."""
    kind = detect_kind(filename, data)
    if kind == "pdf":
        return _parse_pdf(data)
    text = _decode(data)
    if text is None or not text.strip():
        raise UnreadableDocument("The document contains no text.")
    return ParsedDocument(kind=kind, pages=(Page(None, text),), page_count=None)


def detect_kind(filename: str, data: bytes) -> Kind:
    suffix = PurePosixPath(filename.replace("\\", "/")).suffix.lower()
    if b"%PDF-" in data[:1024]:
        return "pdf"
    if suffix == ".pdf":
        raise UnreadableDocument("The file is named .pdf but is not a PDF (no %PDF header).")
    for magic, what in _BINARY_MAGIC:
        if data.startswith(magic):
            raise UnsupportedDocument(
                f"Only PDF, Markdown and plain text are supported; got {what}."
            )
    text = _decode(data)
    if text is None:
        raise UnsupportedDocument(
            "Only PDF, Markdown and plain text are supported; the file is binary or not UTF-8."
        )
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix not in TEXT_SUFFIXES:
        raise UnsupportedDocument(
            f"Only PDF, Markdown and plain text are supported; '{suffix}' files are not."
        )
    return "markdown" if looks_like_markdown(text) else "text"


def looks_like_markdown(text: str) -> bool:
    """Two or more structural lines (headings, fences, setext rules) or structure plus inline
    markup: one stray '#' or '**' in a note does not make it Markdown."""
    structure = len(_MARKDOWN_LINE.findall(text, 0, 200_000))
    inline = len(_MARKDOWN_INLINE.findall(text, 0, 200_000))
    return structure >= 2 or (structure >= 1 and inline >= 1)


def _decode(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    if _CONTROL.search(text):
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _parse_pdf(data: bytes) -> ParsedDocument:
    # Here, not at the top: pypdf (with Pillow and fontTools) is a quarter of a second of
    # imports that a server which never reads a PDF does without.
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableDocument("The PDF is encrypted with a password.")
        pages = tuple(
            Page(number, page.extract_text() or "")
            for number, page in enumerate(reader.pages, start=1)
        )
    except UnreadableDocument:
        raise
    except (DependencyError, FileNotDecryptedError) as exc:
        raise UnreadableDocument(
            f"The PDF is encrypted in a way that cannot be read: {exc}"
        ) from exc
    except PyPdfError as exc:
        raise UnreadableDocument(f"The PDF cannot be read: {exc}") from exc
    except Exception as exc:
        # pypdf raises assorted built-in errors on malformed files; the upload is the culprit.
        # Their text may quote the file's bytes, so only DEBUG shows it; the type is reported.
        log.debug("unreadable PDF: %r", exc)
        raise UnreadableDocument(f"The PDF cannot be read ({type(exc).__name__}).") from exc
    text_pages = tuple(p for p in pages if p.text.strip())
    if not text_pages:
        raise UnreadableDocument("The PDF has no extractable text (scanned images, perhaps).")
    return ParsedDocument(kind="pdf", pages=text_pages, page_count=len(pages))
