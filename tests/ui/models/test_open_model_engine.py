"""Open model's engine choice for GGUF files (issue 17): the default with its reason,
which options apply to which engine, and the llama.cpp options remembered."""

from __future__ import annotations

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.spec import unavailable
from glmdesk.ui.common.settings_store import SettingsStore
from glmdesk.ui.models.open_model_dialog import OpenModelDialog

LLAMA = {
    "engine:llamacpp": None,
    "llamacpp:gpu": unavailable("llamacpp:gpu", "no_gpu_offload", "no GPU offload (a CPU build)"),
}


def test_gguf_defaults_to_llama_cpp_with_the_reason(qtbot, tmp_path) -> None:
    dialog = OpenModelDialog(LoadSettings(), LLAMA)
    qtbot.addWidget(dialog)
    assert dialog.effective_engine() == "llamacpp"
    assert "Runs in llama.cpp" in dialog.engine_note.text() and "faster" in dialog.engine_note.text()
    assert not dialog.quantization_combo.isEnabled() and not dialog.compile_check.isEnabled()
    options = dialog.engine_options["llamacpp"]
    ctx, batch, mmap, gpu = (options.field(n) for n in ("n_ctx", "n_batch", "use_mmap", "n_gpu_layers"))
    assert ctx.isEnabled() and batch.isEnabled() and mmap.isEnabled()
    assert not gpu.isEnabled() and "CPU build" in gpu.toolTip()
    assert ctx.text() == "Automatic (the model's, at most 8192)" and mmap.text() == "Map the file into memory"
    ctx.setValue(4096)
    batch.setValue(256)
    mmap.setChecked(False)
    chosen = dialog.load_settings()
    assert (chosen.engine, chosen.n_ctx, chosen.n_batch, chosen.use_mmap) == ("auto", 4096, 256, False)

    # threads 0: llama.cpp runs one per physical core; transformers adapts the count to load
    assert dialog.threads_spin.value() == 0 and dialog.threads_spin.text() == "Automatic (one per core)"
    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("transformers"))
    assert dialog.quantization_combo.isEnabled() and not ctx.isEnabled()
    assert "Runs in transformers" in dialog.engine_note.text()
    assert dialog.threads_spin.text() == "Automatic (adapts to CPU load)"

    folder = tmp_path / "glm"
    folder.mkdir()
    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("llamacpp"))
    dialog.model_edit.setText(str(folder))  # folders: transformers only
    combo = dialog.engine_combo
    assert not combo.model().item(combo.findData("llamacpp")).isEnabled()
    assert combo.currentData() == "auto" and dialog.effective_engine() == "transformers"
    assert "folders" in dialog.engine_note.text()


def test_without_llama_cpp_gguf_runs_in_transformers_and_says_why(qtbot) -> None:
    missing = {
        key: unavailable(key, "llamacpp_missing", "not installed")
        for key in ("engine:llamacpp", "llamacpp:gpu")
    }
    dialog = OpenModelDialog(LoadSettings(), missing)
    qtbot.addWidget(dialog)
    assert dialog.effective_engine() == "transformers" and "not installed" in dialog.engine_note.text()
    assert dialog.quantization_combo.isEnabled()
    assert not dialog.engine_options["llamacpp"].field("n_ctx").isEnabled()


def test_llama_cpp_options_are_remembered(qtbot) -> None:
    store = SettingsStore()
    store.save_last_model(
        LoadSettings(engine="llamacpp", n_ctx=2048, n_batch=128, use_mmap=False, n_gpu_layers=12)
    )
    again = store.last_model()
    assert (again.engine, again.n_ctx, again.n_batch, again.use_mmap, again.n_gpu_layers) == (
        "llamacpp",
        2048,
        128,
        False,
        12,
    )


def _gguf(path, architecture: str):
    """A GGUF file with only a header (``general.architecture``), as llama.cpp's ``gguf`` writes one."""
    import gguf

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_with_a_vision_projector_says_images_need_transformers_or_a_server(qtbot, tmp_path) -> None:
    model = _gguf(tmp_path / "GLM-4.1V-9B-Thinking-Q4_K_M.gguf", "glm4")
    dialog = OpenModelDialog(LoadSettings(), LLAMA)
    qtbot.addWidget(dialog)
    dialog.model_edit.setText(str(model))
    assert dialog.effective_engine() == "llamacpp"
    assert dialog.vision_note.isHidden()  # no projector beside it: a text model
    projector = _gguf(tmp_path / "mmproj-GLM-4.1V-9B-Thinking-F16.gguf", "clip")
    dialog.model_edit.setText(str(model) + " ")  # retyped: the folder is looked at again
    note = dialog.vision_note.text()
    assert not dialog.vision_note.isHidden()
    assert note.startswith(f"{projector.name} is a vision projector: llama.cpp runs this model's text only")
    assert "transformers engine" in note and "server" in note
    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("transformers"))
    assert dialog.vision_note.isHidden() and not dialog.vision_note.text()
    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("llamacpp"))
    dialog.model_edit.setText(str(projector))  # the projector itself chosen as the model
    assert dialog.vision_note.text().startswith(projector.name)
    _gguf(tmp_path / "mmproj-notes.gguf", "llama").rename(projector)  # named so, but not a projector
    dialog.model_edit.setText(str(model))
    assert dialog.vision_note.isHidden()


def test_the_dialog_opens_tall_enough_for_every_option_row(qtbot) -> None:
    """Qt's first size of a window stops at 2/3 of the screen; the dialog is taller, and
    that squashed llama.cpp's option rows into slivers (seen in a screenshot)."""
    dialog = OpenModelDialog(LoadSettings(), LLAMA)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    options = dialog.engine_options["llamacpp"]
    for name in ("n_ctx", "n_batch", "use_mmap", "n_gpu_layers"):
        field = options.field(name)
        assert field.height() >= field.minimumSizeHint().height(), name


def test_only_the_chosen_engines_options_show_and_reasons_name_options_in_words(qtbot) -> None:
    from glmdesk.engine.backends.spec import unavailable as no

    availability = {
        **LLAMA,
        "device:cuda": no("device:cuda", "no_cuda", "no CUDA"),
        "precision:fp16": no("precision:fp16", "fp16_needs_gpu", "needs a GPU"),
    }
    dialog = OpenModelDialog(LoadSettings(), availability)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    reasons = dialog.reasons_label.text()
    assert "Device GPU (CUDA): No CUDA GPU" in reasons and "Precision fp16: fp16 needs a GPU" in reasons
    assert "cuda:" not in reasons and "fp16:" not in reasons.replace("Precision fp16:", "")
    assert dialog.effective_engine() == "llamacpp"  # a GGUF's default
    llama, torch_box = dialog.engine_options["llamacpp"], dialog.engine_options.get("transformers")
    assert llama.isVisible() and (torch_box is None or not torch_box.isVisible())
    assert not dialog.quantization_combo.isVisible() and not dialog.precision_combo.isVisible()
    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("transformers"))
    assert not llama.isVisible()
    assert dialog.quantization_combo.isVisible() and dialog.precision_combo.isVisible()
    note = dialog.engine_note.text()
    assert note.startswith("Runs in transformers: ") and note.endswith("can be used.")
