"""Split a parsed document into chunks that follow its structure.

A chunk never crosses a Markdown section or a PDF page, so it can be cited by its heading path
and page. Within a section, whole paragraphs are packed up to `TARGET_TOKENS`; a paragraph too
long for one chunk is cut between sentences (and a sentence too long, between tokens). When a
section spans several chunks, each one starts with the last sentences of the one before, up to
`OVERLAP_TOKENS` (15%), so that a passage cut at a boundary is still found whole.

Tokens are counted with the embedding model's own word-piece tokenizer (all-MiniLM-L6-v2, the
`tokenizers` library reading the bundled tokenizer.json): it counts 0.5 to 1 million tokens a
second on one core, against some 6,000 a second for the embedding itself, so an estimator
would save nothing worth its error. The same count is kept whichever embedder is configured.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from palaver.knowledge.parse import ParsedDocument

if TYPE_CHECKING:
    from tokenizers import Tokenizer

TARGET_TOKENS = 400
OVERLAP_TOKENS = 60

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"((?<=[.!?])\s+|\n+)")
_NAME_SEPARATORS = re.compile(r"[_\-.]+")

_tokenizer: Tokenizer | None = None
_tokenizer_lock = threading.Lock()


def tokenizer_path() -> Path:
    """The model's tokenizer.json, shipped with Palaver (see `model/NOTICE.md`)."""
    return Path(__file__).parent / "model" / "tokenizer.json"


def _load_tokenizer() -> Tokenizer:
    global _tokenizer
    with _tokenizer_lock:
        if _tokenizer is None:
            from tokenizers import Tokenizer  # on first use: a server may never chunk

            tokenizer = Tokenizer.from_file(str(tokenizer_path()))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            _tokenizer = tokenizer
        return _tokenizer


def count_tokens(texts: Sequence[str]) -> list[int]:
    """Word-piece tokens of each text, without the [CLS]/[SEP] the model adds."""
    if not texts:
        return []
    encodings = _load_tokenizer().encode_batch(list(texts), add_special_tokens=False)
    return [len(e.ids) for e in encodings]


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    content: str
    heading_path: tuple[str, ...]
    page: int | None
    tokens: int


def document_title(name: str) -> str:
    """A document's title as its words: the file name without its suffix, with the
    underscores, hyphens and dots that join words in file names read as spaces."""
    stem = PurePosixPath(name).stem if "." in name.strip(".") else name
    return " ".join(_NAME_SEPARATORS.sub(" ", stem).split()) or name


def chunk_context(title: str, heading_path: Sequence[str]) -> str:
    """The words that say what any chunk of a document is about: its title and heading path.
    They are embedded and indexed with every chunk, the later ones too, but not shown."""
    return " > ".join(part for part in (title, *heading_path) if part)


def embedding_text(context: str, content: str) -> str:
    """What gets embedded: the context first, as a title line."""
    return f"{context}\n{content}" if context else content


@dataclass
class _Section:
    heading_path: tuple[str, ...]
    page: int | None
    paragraphs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    separator: str
    """The original whitespace before this unit; a blank line when it starts a paragraph."""

    @property
    def starts_paragraph(self) -> bool:
        return self.separator == PARAGRAPH_BREAK


PARAGRAPH_BREAK = "\n\n"


def chunk_document(
    doc: ParsedDocument, target: int = TARGET_TOKENS, overlap: int = OVERLAP_TOKENS
) -> list[Chunk]:
    if doc.kind == "markdown":
        sections = list(_markdown_sections(doc.pages[0].text))
    else:
        sections = [_Section((), page.number, _paragraphs(page.text)) for page in doc.pages]
    chunks: list[Chunk] = []
    for section in sections:
        for text, tokens in _pack(_units(section.paragraphs, target), target, overlap):
            chunks.append(Chunk(len(chunks), text, section.heading_path, section.page, tokens))
    return chunks


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _markdown_sections(text: str) -> Iterator[_Section]:
    """Headings open sections; fenced code stays one paragraph, blank lines and '#' included."""
    path: list[tuple[int, str]] = []
    section = _Section((), None)
    lines: list[str] = []
    fence: str | None = None

    def close_paragraph() -> None:
        if lines and "\n".join(lines).strip():
            section.paragraphs.append("\n".join(lines).strip())
        lines.clear()

    for line in text.split("\n"):
        if fence is not None:
            lines.append(line)
            if line.strip().startswith(fence):
                fence = None
                close_paragraph()
            continue
        opening = _FENCE.match(line)
        heading = _ATX.match(line)
        setext = _SETEXT.match(line)
        if opening:
            close_paragraph()
            fence = opening.group(1)
            lines.append(line)
        elif heading or (setext and len(lines) == 1 and lines[0].strip()):
            if heading:
                level, title = len(heading.group(1)), (heading.group(2) or "").strip()
            else:
                level, title = (1 if line.strip()[0] == "=" else 2), lines.pop().strip()
            close_paragraph()
            if section.paragraphs:
                yield section
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, title)]
            section = _Section(tuple(t for _, t in path if t), None)
        elif not line.strip() or setext:
            close_paragraph()
        else:
            lines.append(line)
    close_paragraph()
    if section.paragraphs:
        yield section


def _units(paragraphs: list[str], target: int) -> list[_Unit]:
    """Sentences (or lines, or token windows of over-long sentences) with their separators."""
    pieces: list[tuple[str, str]] = []
    for paragraph in paragraphs:
        parts = _SENTENCE_END.split(paragraph)
        separator = PARAGRAPH_BREAK
        for i in range(0, len(parts), 2):
            if parts[i].strip():
                pieces.append((separator, parts[i]))
                separator = parts[i + 1] if i + 1 < len(parts) else " "
    counts = count_tokens([text for _, text in pieces])
    units: list[_Unit] = []
    for (separator, text), tokens in zip(pieces, counts, strict=True):
        if tokens <= target:
            units.append(_Unit(text, tokens, separator))
            continue
        for i, (window, size) in enumerate(_token_windows(text, target)):
            units.append(_Unit(window, size, separator if i == 0 else " "))
    return units


def _token_windows(text: str, size: int) -> list[tuple[str, int]]:
    offsets = _load_tokenizer().encode(text, add_special_tokens=False).offsets
    windows = []
    for start in range(0, len(offsets), size):
        end = min(start + size, len(offsets))
        windows.append((text[offsets[start][0] : offsets[end - 1][1]], end - start))
    return windows


def _pack(units: list[_Unit], target: int, overlap: int) -> Iterator[tuple[str, int]]:
    """Greedy packing that closes a chunk at its last paragraph start when that leaves it at
    least half full, and starts the next chunk with the overlap."""
    current: list[_Unit] = []
    for unit in units:
        if current and _size(current) + unit.tokens > target:
            cut = len(current)
            if not unit.starts_paragraph:
                starts = [
                    i
                    for i in range(1, len(current))
                    if current[i].starts_paragraph
                    and _size(current[:i]) >= target // 2
                    and _size(current[i:]) + unit.tokens <= target
                ]
                cut = starts[-1] if starts else cut
            done, rest = current[:cut], current[cut:]
            yield _join(done), _size(done)
            carried = _tail(done, overlap)
            while carried and _size(carried) + _size(rest) + unit.tokens > target:
                carried.pop(0)
            current = carried + rest
        current.append(unit)
    if current:
        yield _join(current), _size(current)


def _size(units: list[_Unit]) -> int:
    return sum(u.tokens for u in units)


def _tail(units: list[_Unit], budget: int) -> list[_Unit]:
    """The last units of a chunk that fit the overlap budget, never the whole chunk."""
    tail: list[_Unit] = []
    used = 0
    for unit in reversed(units[1:]):
        if used + unit.tokens > budget:
            break
        tail.insert(0, unit)
        used += unit.tokens
    return tail


def _join(units: list[_Unit]) -> str:
    return "".join(u.separator + u.text if i else u.text for i, u in enumerate(units)).strip()
