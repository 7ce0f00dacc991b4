"""How pytest-xdist hands the suite to its workers (`python -m pytest -n auto`).

By file, as `--dist loadfile` does: a module's fixtures (many start servers) are set up once,
in one process. The browser tests (tests/web) go to one worker as a whole, in their own order:
they share one server, and the screenshots they save for docs/screenshots show what the tests
before them left on it, as in a run in one process. Work is handed out in the order of
collection, which tests/conftest.py begins with the longest units, and not re-sorted by size
(xdist's default for scopes): a long one handed out last would run on alone at the end.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

WEB = "tests/web/"


class SuiteScheduling(LoadScopeScheduling):
    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return WEB if path.startswith(WEB) else path
