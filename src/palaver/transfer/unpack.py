"""Reading an import's zip within bounds: a member is read only up to the size its entry
declares, and the entries' declared sizes are checked before anything is read, so that a
small zip that unpacks to gigabytes is refused before it is unpacked."""

from __future__ import annotations

import zipfile
from typing import IO

from palaver.errors import TooLarge
from palaver.transfer.model import ChannelFailure

CHUNK = 256 * 1024
UNPACKED_FACTOR = 4
"""An import's zip may unpack to this many times the upload limit, all entries together."""


class Unpacker:
    def __init__(self, archive: zipfile.ZipFile, max_document: int, max_total: int) -> None:
        """`max_document`: the most a JSON entry (read whole) may hold; `max_total`: all the
        entries together."""
        self.archive = archive
        entries = [i for i in archive.infolist() if not i.is_dir()]
        self.names = {i.filename for i in entries}
        total = sum(i.file_size for i in entries)
        if total > max_total:
            raise TooLarge(f"The zip unpacks to {total} bytes, more than the limit of {max_total}.")
        for info in entries:
            if info.filename.endswith(".json") and info.file_size > max_document:
                raise TooLarge(
                    f"{info.filename} unpacks to {info.file_size} bytes, more than the limit of "
                    f"{max_document}."
                )

    def read(self, name: str) -> bytes:
        """The entry's bytes, at most its declared size (ChannelFailure if it is damaged)."""
        parts = []
        with self.open(name) as source:
            while block := self._read(source, name):
                parts.append(block)
        return b"".join(parts)

    def open(self, name: str) -> IO[bytes]:
        try:
            return self.archive.open(name)
        except (zipfile.BadZipFile, KeyError, NotImplementedError, RuntimeError) as exc:
            raise ChannelFailure(f"{name} cannot be read from the zip ({exc}).") from None

    def copy(self, name: str, target: IO[bytes], declared: int) -> int:
        """Copy an entry out; ChannelFailure if it is damaged or larger than `declared` said."""
        written = 0
        with self.open(name) as source:
            while block := self._read(source, name):
                written += len(block)
                if written > declared:
                    raise ChannelFailure(f"{name} holds more than the {declared} bytes it states.")
                target.write(block)
        return written

    @staticmethod
    def _read(source: IO[bytes], name: str) -> bytes:
        try:
            return source.read(CHUNK)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ChannelFailure(f"{name} is damaged in the zip ({exc}).") from None


def common_prefix(names: set[str]) -> str:
    """A single folder every entry is in (a zip made of a folder), or ''."""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in names):
        return f"{tops.pop()}/"
    return ""
