"""The locks agree with `pyproject.toml` and with each other (docs/DEPENDENCIES.md).

`scripts/lock` writes them; these checks catch a dependency edited without running it: CI
installs the test lock, so a requirement the lock does not satisfy would go untested.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def pins(name: str) -> dict[str, str]:
    text = (ROOT / name).read_text()
    found = re.findall(r"(?m)^([A-Za-z0-9_.\-]+)==(\S+) \\\n\s+--hash=sha256:", text)
    assert len(found) == len(re.findall(r"(?m)^[A-Za-z0-9]", text)), "every pin has a hash"
    return {canonicalize_name(package): version for package, version in found}


def requirements(*extras: str) -> list[Requirement]:
    """The project's requirements with these extras, the extras it names of itself unfolded."""
    out = [Requirement(text) for text in PROJECT["dependencies"]]
    todo = list(extras)
    while todo:
        for text in PROJECT["optional-dependencies"][todo.pop()]:
            requirement = Requirement(text)
            if requirement.name == PROJECT["name"]:
                todo += sorted(requirement.extras)
            else:
                out.append(requirement)
    return out


@pytest.mark.parametrize(
    ("lock", "extras"),
    [("requirements-test.txt", ("test",)), ("requirements.txt", ("postgres", "redis"))],
)
def test_a_lock_satisfies_every_requirement_it_covers(lock: str, extras: tuple[str, ...]) -> None:
    pinned = pins(lock)
    for requirement in requirements(*extras):
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{lock} lacks {name}: run scripts/lock"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{lock} pins {name}=={pinned[name]}, outside {requirement}: run scripts/lock"
        )


def test_a_deployment_gets_the_versions_ci_tested_and_no_test_tool() -> None:
    deployment, tested = pins("requirements.txt"), pins("requirements-test.txt")
    assert {name: tested.get(name) for name in deployment} == deployment
    assert not {"torch", "pytest", "uv"} & set(deployment)
