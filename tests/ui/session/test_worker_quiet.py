"""The window's first GGUF conversion keeps stderr quiet, as the CLI does (issue 19, item 7).

The real embedded GGUF, converted afresh into a temporary model cache through the
worker's own load slot (the code path of the window's first start, on the
transformers engine): transformers' tqdm bars ("Converting and de-quantizing GGUF
tensors...", "Loading weights", "Writing model shards") must not reach the app's stderr.
"""

from __future__ import annotations

import threading

import pytest

from glmdesk.core.settings import LoadSettings, ParamsBox
from glmdesk.ui.session.worker import Worker


@pytest.mark.slow
def test_first_gguf_conversion_in_the_window_prints_nothing_on_stderr(capfd, monkeypatch, tmp_path):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    worker = Worker(ParamsBox())
    loaded, failed = [], []
    worker.model_loaded.connect(lambda _id, backend, info, _caps: loaded.append((backend, info)))
    worker.load_failed.connect(lambda _id, info: failed.append(info))
    capfd.readouterr()
    worker.load(1, LoadSettings(engine="transformers"), threading.Event())  # the slot, run in place
    err = capfd.readouterr().err
    assert not failed, failed
    backend, info = loaded[0]
    try:
        assert info.source_kind and any((tmp_path / "models").rglob("config.json"))  # it did convert
        assert err == "", err
    finally:
        backend.close()
