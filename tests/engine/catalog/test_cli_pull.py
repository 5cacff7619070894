"""``glmdesk models`` and ``glmdesk pull`` in a terminal, and ``glmdesk chat --model REPO``
finding a pulled model with the hub switched off."""

from __future__ import annotations

import pytest

from glmdesk.engine.catalog.pulled import find_pulled
from glmdesk.engine.files.sources import embedded_gguf_path, resolve_source
from tests.helpers.cli import run_cli
from tests.helpers.fake_hub import FakeHub, FakeRepo
from tests.helpers.waiting import wait_until


@pytest.fixture
def models_folder(tmp_path, monkeypatch):
    folder = tmp_path / "models"
    monkeypatch.setenv("GLMDESK_MODELS_DIR", str(folder))
    return folder


@pytest.fixture
def online(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def test_models_lists_the_catalog_with_marks_and_fits_filters(models_folder):
    out = run_cli("models", "--search", "GLM-4-9B-0414")
    assert out.returncode == 0, out.stderr
    assert "GLM catalog of " in out.stdout
    assert "The hub is not reachable" in out.stdout  # the suite switches the hub off: said, not waited for
    assert "unsloth/GLM-4-9B-0414-GGUF:Q4_K_M" in out.stdout and "weights " in out.stdout
    everything = run_cli("models").stdout
    fitting = run_cli("models", "--fits").stdout
    assert "too big" in everything and "too big" not in fitting
    assert "GLM-5 " in everything


def test_pull_shows_progress_and_names_the_command_to_chat(models_folder, online, monkeypatch):
    data = bytes(range(256)) * 4096
    repos = {
        "glm/tiny-GGUF": FakeRepo(
            {"tiny-Q4_K_M.gguf": data, "tiny-Q8_0.gguf": data * 2}, lfs={"tiny-Q4_K_M.gguf"}
        )
    }
    with FakeHub(repos) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        missing = run_cli("pull", "glm/tiny-GGUF")
        assert missing.returncode == 2 and "choose one with --quant" in missing.stderr
        out = run_cli("pull", "glm/tiny-GGUF", "--quant", "Q4_K_M")
        again = run_cli("pull", "glm/tiny-GGUF", "--quant", "Q4_K_M")
        gone = run_cli("pull", "glm/other")
    assert out.returncode == 0, out.stderr
    assert "pulling glm/tiny-GGUF Q4_K_M: 1 files" in out.stderr
    assert "glmdesk chat --model glm/tiny-GGUF:Q4_K_M" in out.stderr
    assert again.returncode == 0 and len(hub.requests) == 1  # already there: nothing fetched
    assert "is pulled already" in again.stderr
    assert gone.returncode == 2 and "no repository glm/other" in gone.stderr
    assert find_pulled("glm/tiny-GGUF", models_folder).quant == "Q4_K_M"


def test_chat_finds_a_pulled_model_by_its_repository_offline(
    models_folder, online, monkeypatch, embedded_folder
):
    from huggingface_hub import constants

    gguf = embedded_gguf_path()
    repos = {"glm/smol-GGUF": FakeRepo({gguf.name: gguf.read_bytes()}, lfs={gguf.name})}
    with FakeHub(repos) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        assert run_cli("pull", "glm/smol-GGUF").returncode == 0
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    source = resolve_source("glm/smol-GGUF")
    assert source.kind == "gguf" and source.location.startswith(str(models_folder))
    out = run_cli(
        "chat",
        "--model",
        "glm/smol-GGUF:Q4_1",
        "--prompt",
        "What is the capital of France?",
        "--temperature",
        "0",
        "--engine",
        "transformers",
    )
    assert out.returncode == 0, out.stderr
    assert "Paris" in out.stdout


def test_a_pull_killed_mid_file_resumes_in_the_next_run(models_folder, online, monkeypatch):
    import os
    import signal
    import subprocess
    import sys

    data = os.urandom(3 << 20)
    repos = {"glm/tiny-GGUF": FakeRepo({"tiny-Q4_K_M.gguf": data}, lfs={"tiny-Q4_K_M.gguf"})}
    with FakeHub(repos) as hub:
        hub.hold_after["tiny-Q4_K_M.gguf"] = 1 << 20
        env = dict(os.environ, HF_ENDPOINT=hub.endpoint, HF_HUB_OFFLINE="0")
        child = subprocess.Popen(
            [sys.executable, "-m", "glmdesk", "pull", "glm/tiny-GGUF", "--quant", "Q4_K_M"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            assert hub.held.wait(60), child.stderr.read() if child.poll() is not None else "no request"
            part = models_folder / ".partial" / "glm--tiny-GGUF--Q4_K_M" / "tiny-Q4_K_M.gguf.part"
            wait_until(lambda: part.is_file() and part.stat().st_size >= 1 << 20, 30)  # the child wrote it
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        finally:
            if child.poll() is None:
                child.kill()
        kept = part.stat().st_size
        assert kept == 1 << 20
        hub.hold_after.clear()
        hub.release.set()
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        out = run_cli("pull", "glm/tiny-GGUF", "--quant", "Q4_K_M")
    assert out.returncode == 0, out.stderr
    assert "resuming: 1 MiB of 3 MiB already here" in out.stderr
    assert [start for _, start in hub.requests] == [0, 1 << 20]
    assert (find_pulled("glm/tiny-GGUF", models_folder).model_path).read_bytes() == data
