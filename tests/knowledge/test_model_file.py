"""The shipped int8 embedding model is ours: rebuilt from upstream's float weights it is the
same file byte for byte, and a copy that is not that file is refused before ONNX Runtime reads
a byte of it."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import onnxruntime
import pytest

from palaver.knowledge.embed import INT8_FILE, INT8_SHA256, Int8Model, ModelFileError

ROOT = Path(__file__).resolve().parents[2]


def test_the_build_script_remakes_the_shipped_file_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "model.onnx"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts/build_embedding_model.py"), "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    built = hashlib.sha256(out.read_bytes()).hexdigest()
    assert built == INT8_SHA256 == hashlib.sha256(INT8_FILE.read_bytes()).hexdigest()


def test_the_build_script_refuses_weights_that_are_not_upstreams(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/build_embedding_model.py"), "--weights",
         str(weights), "--out", str(tmp_path / "out.onnx")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "is not upstream's" in done.stderr
    assert not (tmp_path / "out.onnx").exists()


@pytest.mark.parametrize("where", ["weights", "header", "truncated"])
def test_a_corrupted_model_is_refused_before_onnx_runtime_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    data = bytearray(INT8_FILE.read_bytes())
    if where == "weights":
        data[len(data) // 2] ^= 0x01  # one bit of one int8 weight: ONNX Runtime would load it
    elif where == "header":
        data[0] ^= 0xFF
    else:
        del data[len(data) // 3 :]
    copy = tmp_path / "all-MiniLM-L6-v2-int8.onnx"
    copy.write_bytes(bytes(data))
    seen: list[object] = []

    def session(model: object, *args: object, **kwargs: object) -> None:
        seen.append(model)
        raise AssertionError("ONNX Runtime was handed the model")

    monkeypatch.setattr(onnxruntime, "InferenceSession", session)
    with pytest.raises(ModelFileError) as refused:
        Int8Model(512, path=copy)
    assert str(copy) in str(refused.value) and "sha256" in str(refused.value)
    assert seen == []


def test_a_missing_model_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match=r"cannot read the embedding model .*missing\.onnx"):
        Int8Model(512, path=tmp_path / "missing.onnx")
