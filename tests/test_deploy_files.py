"""The files in `deploy/` agree with each other and with what a node reads.

No container image can be pulled here, so compose itself does not run in the suite; these
checks keep what can be checked without it from drifting: the nodes compose starts are the
ones nginx balances, every variable set for a node is one it reads, nginx takes the uploads
the nodes take, and systemd accepts the unit. nginx's own configuration runs for real in
`tests/test_cluster.py`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from palaver.config import Config
from palaver.settings import Limits

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def node_services() -> dict[str, dict[str, Any]]:
    """The services that run `palaver serve` (the image's command; the backup runs another)."""
    services: dict[str, dict[str, Any]] = compose()["services"]
    return {
        name: s
        for name, s in services.items()
        if s.get("image") == "palaver:local" and "command" not in s
    }


def variables_a_node_reads() -> set[str]:
    names = set()
    for name, field in Config.model_fields.items():
        alias = field.validation_alias
        names.add(alias if isinstance(alias, str) else f"PALAVER_{name.upper()}")
    return names


def test_nginx_balances_exactly_the_nodes_compose_starts() -> None:
    upstream = re.findall(r"(?m)^\s+server (\S+):8000 ", (DEPLOY / "nginx.conf").read_text())
    assert len(node_services()) >= 2
    assert sorted(upstream) == sorted(node_services())


def test_compose_runs_postgresql_with_pgvector_redis_and_nginx_before_the_nodes() -> None:
    services = compose()["services"]
    assert services["postgres"]["image"] == "pgvector/pgvector:pg16"
    assert services["redis"]["image"].startswith("redis:")
    assert set(services["nginx"]["depends_on"]) == set(node_services())
    for node in node_services().values():
        env = node["environment"]
        assert env["DATABASE_URL"].startswith("postgresql://")
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert env["PALAVER_TRUST_PROXY"] == "1"


@pytest.mark.parametrize("source", ["compose.yaml", "palaver.env.example", "Dockerfile"])
def test_every_variable_set_for_a_node_is_one_it_reads(source: str) -> None:
    text = (DEPLOY / source).read_text()
    if source == "compose.yaml":
        names = {name for node in node_services().values() for name in node["environment"]}
    else:
        found = re.findall(r"(?m)^\s*(?:ENV\s+)?([A-Z][A-Z0-9_]+)=", text)
        names = {name for name in found if not name.startswith(("PIP_", "PYTHON"))}
    assert names, f"no variables found in {source}"
    assert names <= variables_a_node_reads(), names - variables_a_node_reads()


def test_nginx_accepts_an_upload_as_large_as_the_nodes_do() -> None:
    found = re.search(r"client_max_body_size (\d+)m;", (DEPLOY / "nginx.conf").read_text())
    assert found
    assert int(found.group(1)) * 1024 * 1024 > Limits().maxUploadBytes


def test_compose_backs_up_the_nodes_database_and_uploads_daily_keeping_the_newest() -> None:
    services = compose()["services"]
    backup = services["backup"]
    node = next(iter(node_services().values()))
    assert backup["image"] == node["image"]
    assert backup["environment"]["DATABASE_URL"] == node["environment"]["DATABASE_URL"]
    assert "uploads:/data:ro" in backup["volumes"] and "backups:/backups" in backup["volumes"]
    script = backup["command"][-1]
    assert "palaver backup --quiet --dir /backups --keep 14" in script and "sleep 86400" in script
    assert "backups" in compose()["volumes"]
    assert (
        "mkdir /data /backups && chown palaver:palaver /data /backups"
        in (DEPLOY / "Dockerfile").read_text()
    ), "the volume starts out writable by the image's user"


def test_systemd_accepts_the_backup_service_and_its_daily_timer(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    service = (DEPLOY / "palaver-backup.service").read_text()
    timer = (DEPLOY / "palaver-backup.timer").read_text()
    assert re.search(
        r"(?m)^ExecStart=\S+/palaver backup --quiet .*--dir (\S+) --keep \d+$", service
    )
    assert "ReadWritePaths=/var/backups/palaver" in service
    assert re.search(r"(?m)^OnCalendar=\S+", timer) and "Persistent=true" in timer
    (tmp_path / "palaver-backup.service").write_text(
        re.sub(r"(?m)^ExecStart=.*$", "ExecStart=/bin/true", service)
    )
    (tmp_path / "palaver-backup.timer").write_text(timer)
    checked = subprocess.run(
        [analyze, "verify", str(tmp_path / "palaver-backup.timer"),
         str(tmp_path / "palaver-backup.service")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr


def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    unit = (DEPLOY / "palaver.service").read_text()
    assert "EnvironmentFile=/etc/palaver/palaver.env" in unit
    # The program is not installed here; everything else is checked as written.
    (tmp_path / "palaver.service").write_text(
        re.sub(r"(?m)^ExecStart=\S+", "ExecStart=/bin/true", unit)
    )
    checked = subprocess.run(
        [analyze, "verify", str(tmp_path / "palaver.service")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr
