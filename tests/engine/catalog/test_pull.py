"""glmdesk pulls from a local server that answers as the hub does (``HF_ENDPOINT``):
the file list, progress, cancel and resume without fetching a byte twice, a damaged
file caught and deleted, a full disk refused before anything is written, a lost
connection resumed or reported, 401/403/404 worded, the hub cache reused, and a
half-finished pull never listed as a model."""

from __future__ import annotations

import json
import os
import threading

import pytest

from glmdesk.engine.catalog.hub_files import PullError
from glmdesk.engine.catalog.pull import Puller
from glmdesk.engine.catalog.pulled import find_pulled, pulled_models
from tests.helpers.fake_hub import FakeHub, FakeRepo

WEIGHTS = os.urandom(3 << 20)  # 3 MiB: a dozen chunks
Q4 = os.urandom(1 << 20)
Q8 = os.urandom(2 << 20)


def _repos() -> dict[str, FakeRepo]:
    return {
        "glm/tiny": FakeRepo(
            {
                "config.json": b'{"model_type": "glm4"}',
                "tokenizer.json": b"{}",
                "model.safetensors": WEIGHTS,
                "README.md": b"# tiny",
                "pytorch_model.bin": b"old weights",
            },
            lfs={"model.safetensors", "pytorch_model.bin"},
        ),
        "glm/tiny-GGUF": FakeRepo(
            {"tiny-Q4_K_M.gguf": Q4, "tiny-Q8_0.gguf": Q8}, lfs={"tiny-Q4_K_M.gguf", "tiny-Q8_0.gguf"}
        ),
        "glm/gated": FakeRepo({"config.json": b"{}"}, gated=True),
    }


@pytest.fixture(autouse=True)
def online(monkeypatch):
    """The suite keeps the hub offline; these tests talk to their own hub."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def hub(monkeypatch):
    with FakeHub(_repos()) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        yield server


@pytest.fixture
def puller(tmp_path):
    return Puller(tmp_path / "models", hub_cache=False)


def test_a_safetensors_repo_is_pulled_with_progress_checked_and_listed(hub, puller):
    plan = puller.plan("glm/tiny")
    assert sorted(f.path for f in plan.files) == ["config.json", "model.safetensors", "tokenizer.json"]
    reports = []
    folder = puller.pull(plan, reports.append)
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    stages = [r.stage for r in reports]
    assert "downloading" in stages and "verifying" in stages and stages[-1] == "done"
    downloading = [r for r in reports if r.stage == "downloading"]
    assert [r.done_bytes for r in downloading] == sorted(r.done_bytes for r in downloading)
    assert reports[-1].done_bytes == reports[-1].total_bytes == plan.total_bytes
    assert all(r.bytes_per_s >= 0 for r in downloading)
    assert downloading[-1].eta_s is not None
    (model,) = pulled_models(puller.folder)
    assert (model.repo, model.commit, model.model_path) == ("glm/tiny", hub.repos["glm/tiny"].commit, folder)
    assert find_pulled("GLM/Tiny", puller.folder) == model
    assert not list((puller.folder / ".partial").glob("*/*.part"))


def test_a_gguf_quantization_is_chosen_and_a_missing_one_named(hub, puller):
    with pytest.raises(PullError) as no_choice:
        puller.plan("glm/tiny-GGUF")
    assert no_choice.value.kind == "no_quant"
    assert "Q4_K_M, Q8_0" in no_choice.value.message
    with pytest.raises(PullError, match="Q5_K_M is not among them"):
        puller.plan("glm/tiny-GGUF", "Q5_K_M")
    folder = puller.pull(puller.plan("glm/tiny-GGUF", "q4_k_m"))
    assert [p.name for p in folder.iterdir() if p.suffix == ".gguf"] == ["tiny-Q4_K_M.gguf"]
    assert find_pulled("glm/tiny-GGUF:Q4_K_M", puller.folder).model_path == folder / "tiny-Q4_K_M.gguf"
    assert find_pulled("glm/tiny-GGUF:Q8_0", puller.folder) is None


def test_cancel_keeps_the_bytes_and_the_next_pull_resumes_without_fetching_them_again(hub, puller):
    hold = 1 << 20
    hub.hold_after["model.safetensors"] = hold
    plan = puller.plan("glm/tiny")
    cancel, reached, result = threading.Event(), threading.Event(), {}

    def progress(report):
        if (
            report.file == "model.safetensors"
            and report.stage == "downloading"
            and report.fetched_bytes >= hold
        ):
            reached.set()

    def run():
        result["folder"] = puller.pull(plan, progress, cancel)

    thread = threading.Thread(target=run)
    thread.start()
    assert reached.wait(20)
    cancel.set()
    hub.release.set()
    thread.join(20)
    assert not thread.is_alive() and result["folder"] is None
    assert pulled_models(puller.folder) == []  # half a model is never listed
    part = puller.folder / ".partial" / "glm--tiny" / "model.safetensors.part"
    assert part.stat().st_size == hold

    hub.hold_after.clear()
    hub.requests.clear()
    reports = []
    folder = puller.pull(puller.plan("glm/tiny"), reports.append)
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert hub.requests == [("model.safetensors", hold)]  # config and tokenizer were finished already
    assert reports[0].stage == "resuming" and reports[0].resumed_bytes >= hold
    assert reports[-1].fetched_bytes == len(WEIGHTS) - hold


def test_a_file_that_arrives_damaged_is_deleted_and_named(hub, puller):
    hub.corrupt.add("model.safetensors")
    with pytest.raises(PullError) as caught:
        puller.pull(puller.plan("glm/tiny"))
    assert caught.value.kind == "hash_mismatch"
    assert "model.safetensors" in caught.value.message and "deleted" in caught.value.message
    work = puller.folder / ".partial" / "glm--tiny"
    assert not (work / "model.safetensors").exists() and not (work / "model.safetensors.part").exists()
    assert pulled_models(puller.folder) == []
    hub.corrupt.clear()
    assert (puller.pull(puller.plan("glm/tiny")) / "model.safetensors").read_bytes() == WEIGHTS


def test_a_full_disk_is_refused_with_the_sizes_before_anything_is_written(hub, tmp_path):
    puller = Puller(tmp_path / "models", hub_cache=False, free_bytes=lambda path: 1 << 20)
    with pytest.raises(PullError) as caught:
        puller.pull(puller.plan("glm/tiny"))
    assert caught.value.kind == "disk_full"
    assert "3 MiB more is needed" in caught.value.message and "1 MiB free" in caught.value.message
    assert hub.requests == []
    assert not list((tmp_path / "models").rglob("*.part"))


def test_a_connection_cut_mid_file_is_resumed_from_where_it_stopped(hub, puller):
    hub.cut_after["model.safetensors"] = 500_000
    folder = puller.pull(puller.plan("glm/tiny"))
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    starts = [start for path, start in hub.requests if path == "model.safetensors"]
    assert starts[0] == 0 and 0 < starts[1] <= 500_000


def test_a_server_gone_mid_file_stops_with_a_sentence_and_keeps_the_bytes(hub, puller, monkeypatch):
    monkeypatch.setattr("glmdesk.engine.catalog.pull.RETRY_WAIT_S", 0.01)
    hub.hold_after["model.safetensors"] = 1 << 20
    plan = puller.plan("glm/tiny")
    errors, reached = [], threading.Event()

    def run():
        try:
            puller.pull(plan, lambda r: r.fetched_bytes >= 1 << 20 and reached.set())
        except PullError as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert reached.wait(20)
    hub.stop()
    thread.join(30)
    assert not thread.is_alive()
    (error,) = errors
    assert error.kind == "connection_lost" and "pull again to resume" in error.message
    assert (puller.folder / ".partial" / "glm--tiny" / "model.safetensors.part").stat().st_size >= 1 << 20


def test_gated_and_missing_repositories_say_what_to_do(hub, tmp_path):
    anonymous = Puller(tmp_path / "m", hub_cache=False)
    with pytest.raises(PullError) as no_token:
        anonymous.plan("glm/gated")
    assert no_token.value.kind == "gated" and no_token.value.params["status"] == 401
    assert "accept its terms" in no_token.value.message and "token" in no_token.value.message
    with pytest.raises(PullError) as wrong_token:
        Puller(tmp_path / "m", token="hf_wrong", hub_cache=False).plan("glm/gated")
    assert wrong_token.value.params["status"] == 403
    assert Puller(tmp_path / "m", token="hf_good", hub_cache=False).plan("glm/gated").files
    with pytest.raises(PullError) as missing:
        anonymous.plan("glm/nothing")
    assert missing.value.kind == "not_found" and "glm/nothing" in missing.value.message


def test_an_unreachable_hub_answers_at_once(monkeypatch, puller):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: refused
    with pytest.raises(PullError) as caught:
        puller.plan("glm/tiny")
    assert caught.value.kind == "offline" and "not reachable" in caught.value.message


def test_files_in_the_hub_cache_are_linked_not_fetched_again(hub, tmp_path):
    import hashlib

    cache = tmp_path / "hub"
    snapshot = cache / "models--glm--tiny" / "snapshots" / hub.repos["glm/tiny"].commit
    blob = cache / "models--glm--tiny" / "blobs" / hashlib.sha256(WEIGHTS).hexdigest()
    blob.parent.mkdir(parents=True)
    blob.write_bytes(WEIGHTS)
    snapshot.mkdir(parents=True)
    (snapshot / "model.safetensors").symlink_to(blob)
    puller = Puller(tmp_path / "models", hub_cache=cache)
    reports = []
    folder = puller.pull(puller.plan("glm/tiny"), reports.append)
    assert "model.safetensors" not in [path for path, _ in hub.requests]
    assert (folder / "model.safetensors").resolve() == blob.resolve()
    assert "linked" in [r.stage for r in reports]
    record = json.loads((folder / "glmdesk-pull.json").read_text())
    assert record["complete"] is True


@pytest.mark.parametrize(
    ("path", "quant"),
    [
        ("GLM-4.7-Flash-Q4_K_M.gguf", "Q4_K_M"),
        ("THUDM_GLM-4-9B-0414-q8_0.gguf", "Q8_0"),
        ("Q4_K_M/GLM-4.5-Q4_K_M-00001-of-00005.gguf", "Q4_K_M"),
        ("UD-Q2_K_XL/GLM-4.6-UD-Q2_K_XL-00002-of-00003.gguf", "UD-Q2_K_XL"),
        ("BF16/GLM-4.5-Air-BF16-00001-of-00005.gguf", "BF16"),
        ("GLM-4-32B-0414-IQ4_XS.gguf", "IQ4_XS"),
        ("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"),
        ("glm-4-9b-chat.gguf", None),
    ],
)
def test_the_quantization_is_read_from_gguf_names_as_uploaders_write_them(path, quant):
    from glmdesk.engine.catalog.hub_files import quant_of

    assert quant_of(path) == quant


def test_a_split_gguf_is_pulled_whole_and_mmproj_files_are_left_out():
    from glmdesk.engine.catalog.hub_files import RemoteFile, select_files

    names = [
        "Q4_K_M/GLM-4.5-Air-Q4_K_M-00001-of-00002.gguf",
        "Q4_K_M/GLM-4.5-Air-Q4_K_M-00002-of-00002.gguf",
        "Q8_0/GLM-4.5-Air-Q8_0-00001-of-00003.gguf",
        "mmproj-F16.gguf",
        "README.md",
    ]
    files = [RemoteFile(n, 1, None, None) for n in names]
    quant, chosen = select_files("u/GLM-4.5-Air-GGUF", files, "Q4_K_M")
    assert quant == "Q4_K_M" and [f.path for f in chosen] == names[:2]


@pytest.mark.parametrize("repo", ["not a repo", "../../etc", "https://example.org/x"])
def test_a_malformed_repository_id_is_named_as_such_not_as_the_hub_offline(repo):
    from glmdesk.engine.catalog.hub_files import PullError, list_files

    with pytest.raises(PullError) as refused:
        list_files(repo)
    assert refused.value.kind == "not_found" and "is not a repository id" in str(refused.value)
