"""scripts/refresh_catalog.py rewrites file lists and sizes from the hub (here a local
server answering as the hub does) and names what it could not refresh."""

from __future__ import annotations

import datetime
import importlib.util
import json
from pathlib import Path

import pytest

from glmdesk.engine.catalog.catalog import catalog_path, load_catalog
from tests.helpers.fake_hub import FakeHub, FakeRepo

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "refresh_catalog.py"


@pytest.fixture
def refresh(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    spec = importlib.util.spec_from_file_location("refresh_catalog", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def test_sizes_and_files_come_from_the_hub_and_failures_are_named(refresh, tmp_path, monkeypatch, capsys):
    shipped = json.loads(catalog_path().read_text())
    model = next(m for m in shipped["models"] if m["name"] == "GLM-4.7-Flash")
    model["repos"] = [r for r in model["repos"] if r["format"] == "gguf"] + [
        {
            "repo": "zai-org/Gone",
            "format": "safetensors",
            "quants": [{"quant": "bf16", "bits_per_weight": 16}],
        }
    ]
    model["repos"][0]["quants"] = [{"quant": "Q4_K_M", "bits_per_weight": 4.85}]
    source = tmp_path / "in.json"
    source.write_text(json.dumps(shipped | {"models": [model]}))
    repo = FakeRepo(
        {"GLM-4.7-Flash-Q4_K_M.gguf": b"x" * 1000, "GLM-4.7-Flash-Q8_0.gguf": b"y" * 2000, "README.md": b""}
    )
    with FakeHub({"unsloth/GLM-4.7-Flash-GGUF": repo}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        code = refresh(["--catalog", str(source), "--out", str(tmp_path / "out.json")])
    assert code == 1  # one repository was not refreshed
    assert "zai-org/Gone: The hub has no repository zai-org/Gone" in capsys.readouterr().out
    catalog = load_catalog(tmp_path / "out.json")
    (flash,) = catalog.models
    gguf = flash.variants[0]
    assert (gguf.files, gguf.size_bytes, gguf.size_source) == (("GLM-4.7-Flash-Q4_K_M.gguf",), 1000, "hub")
    assert flash.variants[1].size_source == "estimated"  # kept as it was
    assert catalog.written == "from the hub, except 1 repositories"
    assert catalog.date == datetime.date.today().isoformat()
