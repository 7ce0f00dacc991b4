"""What the CPU running the suite can do: integer kernels differ by instruction set, so tests
that check them name the set they ran on."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_SETS = ("avx512_vnni", "avx_vnni", "avx512f", "avx2")


@cache
def instruction_sets() -> str:
    """The int8-relevant sets of this CPU, e.g. "avx2" or "avx512_vnni avx512f avx2"."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.partition(":")[2].split())
            break
    found = [name for name in _SETS if name in flags]
    model = next(
        (
            line.partition(":")[2].strip()
            for line in text.splitlines()
            if line.startswith("model name")
        ),
        "unknown CPU",
    )
    return f"{model}: {' '.join(found) or 'none of ' + ', '.join(_SETS)}"
