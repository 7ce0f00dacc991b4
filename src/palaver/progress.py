"""A plain-text progress bar for long commands, on one line of a terminal.

It redraws at most a few times a second, however often it is told of progress, and draws
nothing at all when its stream is not a terminal (a log file, a pipe) or when it is switched off.
"""

from __future__ import annotations

import time
from typing import TextIO

REDRAW_SECONDS = 0.25
WIDTH = 30


class ProgressBar:
    def __init__(self, stream: TextIO, enabled: bool = True) -> None:
        self._stream = stream
        self._total = 1
        self._enabled = enabled and stream.isatty()
        self._drawn_at = 0.0
        self._width = 0
        self._unit = "rows"

    def begin(self, total: int, unit: str = "rows") -> None:
        """The work ahead: `total` rows (or bytes, files: `unit`)."""
        self._total = max(total, 1)
        self._unit = unit

    def update(self, done: int, label: str) -> None:
        """Progress so far: `done` of the total, while working on `label`."""
        now = time.monotonic()
        if not self._enabled or now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        share = min(done / self._total, 1.0)
        filled = int(share * WIDTH)
        line = (
            f"[{'#' * filled}{'.' * (WIDTH - filled)}] {share:4.0%}  "
            f"{done:,}/{self._total:,} {self._unit}  {label}"
        )
        self._stream.write("\r" + line.ljust(self._width))
        self._stream.flush()
        self._width = len(line)

    def close(self) -> None:
        """Clear the bar, so that what is printed next starts on a clean line."""
        if self._enabled and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
        self._width = 0
