"""A zip written front to back into chunks, never seeking, so that it can be sent as it is
made: each entry's sizes follow its data (a data descriptor), as zip readers expect of a
stream. Blocking (compression, and the files it reads): call it on a worker thread."""

from __future__ import annotations

import io
import mimetypes
import zipfile
from datetime import datetime
from pathlib import Path
from typing import IO

FILE_CHUNK = 256 * 1024
_STORED_KINDS = ("image/", "video/", "audio/")
_STORED_TYPES = {
    "application/zip",
    "application/gzip",
    "application/pdf",
    "application/x-7z-compressed",
}


class _Sink(io.RawIOBase):
    """Where the zip writes: kept until taken. Not seekable, so `zipfile` streams."""

    def __init__(self) -> None:
        super().__init__()
        self._chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self._chunks.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        taken = b"".join(self._chunks)
        self._chunks.clear()
        return taken


class ZipStream:
    def __init__(self, when: datetime) -> None:
        self._sink = _Sink()
        self._zip = zipfile.ZipFile(self._sink, "w", compression=zipfile.ZIP_DEFLATED)
        self._when = when.timetuple()[:6]
        self._entry: IO[bytes] | None = None

    def begin(self, name: str) -> None:
        """Start a compressed entry of unknown size (the document)."""
        info = zipfile.ZipInfo(name, date_time=self._when)
        info.compress_type = zipfile.ZIP_DEFLATED
        self._entry = self._zip.open(info, "w", force_zip64=True)

    def write(self, data: bytes) -> bytes:
        """Add to the open entry; answers the zip's bytes made so far."""
        assert self._entry is not None
        self._entry.write(data)
        return self._sink.take()

    def end(self) -> bytes:
        assert self._entry is not None
        self._entry.close()
        self._entry = None
        return self._sink.take()

    def add_file(self, name: str, source: Path) -> FileCopy | None:
        """Begin copying a file in, a slice per `FileCopy.step`; None if the file is gone."""
        try:
            handle = source.open("rb")
        except FileNotFoundError:
            return None
        info = zipfile.ZipInfo(name, date_time=self._when)
        info.compress_type = zipfile.ZIP_STORED if _compressed(name) else zipfile.ZIP_DEFLATED
        return FileCopy(handle, self._zip.open(info, "w", force_zip64=True), self._sink)

    def close(self) -> bytes:
        self._zip.close()
        return self._sink.take()


class FileCopy:
    def __init__(self, source: IO[bytes], entry: IO[bytes], sink: _Sink) -> None:
        self._source = source
        self._entry = entry
        self._sink = sink

    def step(self) -> tuple[bytes, bool]:
        """Copy the next slice; answers the zip's bytes made and whether the file is done."""
        block = self._source.read(FILE_CHUNK)
        if block:
            self._entry.write(block)
            return self._sink.take(), False
        self.close()
        return self._sink.take(), True

    def close(self) -> None:
        self._source.close()
        self._entry.close()


def _compressed(name: str) -> bool:
    """Kinds already compressed, stored as they are rather than deflated again."""
    kind = mimetypes.guess_type(name)[0] or ""
    return kind.startswith(_STORED_KINDS) or kind in _STORED_TYPES
