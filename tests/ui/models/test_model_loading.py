"""Loading in the window: errors keep the app usable, Cancel, closing while loading.

Issue 3 ("a load error leaves the window usable") and issue 7 cases 12 (a missing
folder or truncated weights: a sentence naming the file, the app keeps running with
the embedded model) and 14 (close while loading).
"""

from __future__ import annotations

import json
from pathlib import Path

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.options import unavailable
from glmdesk.ui.models.open_model_dialog import OpenModelDialog

LOAD_MS = 180_000
ANSWER_MS = 120_000


def _truncated_model(tmp_path: Path, shared_model) -> Path:
    """A model folder whose weight file was cut short (a download that stopped)."""
    folder = tmp_path / "broken-model"
    folder.mkdir()
    source = Path(shared_model.info.location)
    header = {"w": {"dtype": "F32", "shape": [1024, 1024], "data_offsets": [0, 4 * 1024 * 1024]}}
    raw = json.dumps(header).encode()
    with open(folder / "model.safetensors", "wb") as fh:
        fh.write(len(raw).to_bytes(8, "little") + raw + b"\0" * 1000)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "source": source.name}))
    return folder


def test_load_error_leaves_window_usable(qtbot, window, tmp_path) -> None:
    previous = window.model_info
    missing = tmp_path / "no-such-model"
    with qtbot.waitSignal(window.load_view.load_error_shown, timeout=LOAD_MS) as blocker:
        window.load_model(LoadSettings(model=str(missing)))
        assert window.status.load_indicator.isVisible()
    sentence = blocker.args[0]
    assert str(missing) in sentence and previous.name in sentence
    assert window.notice.isVisible() and window.notice.text() == sentence
    assert window.model_info is previous and not window.is_loading()
    assert not window.status.load_indicator.isVisible()
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as finished:
        assert window.send_message("Say hello.")
    assert finished.args[1].finish_reason in ("stop", "length")


def test_truncated_weights_are_named(qtbot, window, tmp_path, shared_model) -> None:
    folder = _truncated_model(tmp_path, shared_model)
    with qtbot.waitSignal(window.load_view.load_error_shown, timeout=LOAD_MS) as blocker:
        window.load_model(LoadSettings(model=str(folder)))
    assert "model.safetensors" in blocker.args[0]
    assert window.model_info.name == shared_model.info.name


def test_missing_last_model_falls_back_to_embedded(qtbot, make_window, tmp_path) -> None:
    window = make_window(start=False)
    window.store.save_last_model(LoadSettings(model=str(tmp_path / "deleted-model")))
    with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_MS) as ready:
        with qtbot.waitSignal(window.load_view.load_error_shown, timeout=LOAD_MS) as failed:
            window.start()
        fallback_loading = window.is_loading() and window.status.load_indicator.isVisible()
    assert "deleted-model" in failed.args[0]
    assert ready.args[0].source_kind == "embedded"
    assert fallback_loading  # the fallback load shows its progress
    assert window.notice.text() == failed.args[0]  # the error stays visible


def test_close_while_loading(qtbot, make_window, qtlog) -> None:
    window = make_window(start=False)
    with qtbot.waitSignal(window.worker.load_progressed, timeout=LOAD_MS):
        window.start()
    assert window.is_loading()
    window.close()
    assert window.worker_thread.isFinished()
    assert not [r for r in qtlog.records if "Destroyed while thread" in r.message]


def test_cancel_loading_keeps_the_current_model(qtbot, window) -> None:
    previous = window.model_info
    with qtbot.waitSignal(window.load_view.load_error_shown, timeout=LOAD_MS) as blocker:
        window.load_model(LoadSettings())
        window.status.load_indicator.cancel_button.click()
    assert "cancelled" in blocker.args[0] and window.model_info is previous
    assert window.notice.kind == "info"


def test_open_dialog_disables_impossible_choices(qtbot, tmp_path) -> None:
    availability = {
        "quantization:4bit": unavailable("quantization:4bit", "bnb_missing", "not installed"),
        "quantization:8bit": None,
        "precision:fp16": unavailable("precision:fp16", "fp16_needs_gpu", "fp16 needs a GPU."),
        "device:cuda": unavailable("device:cuda", "no_cuda", "No CUDA GPU was found."),
    }
    dialog = OpenModelDialog(LoadSettings(), availability)
    qtbot.addWidget(dialog)
    combo = dialog.quantization_combo
    item = combo.model().item(combo.findData("4bit"))
    assert (
        not item.isEnabled() and item.toolTip() == "bitsandbytes cannot be used here (it is not installed)."
    )
    assert combo.model().item(combo.findData("8bit")).isEnabled()
    assert "fp16 needs a GPU" in dialog.reasons_label.text()  # worded by the UI from the key
    # Trust in a folder's own code: off by default, names the folder, cleared on change.
    folder = tmp_path / "my-glm"
    folder.mkdir()
    assert not dialog.trust_check.isEnabled()
    dialog.model_edit.setText(str(folder))
    assert dialog.trust_check.isEnabled() and not dialog.trust_check.isChecked()
    assert "my-glm" in dialog.trust_check.text()
    dialog.trust_check.setChecked(True)
    assert dialog.load_settings().trust_remote_code
    dialog.model_edit.setText(str(folder) + "-other")
    assert not dialog.trust_check.isChecked() and not dialog.load_settings().trust_remote_code


def test_cpu_speed_options_load_answer_and_are_remembered(qtbot, window) -> None:
    """Issue 10: int4 weight-only and the thread count, chosen in Open model."""
    dialog = OpenModelDialog(window.store.last_model(), {})
    qtbot.addWidget(dialog)
    combo = dialog.quantization_combo
    assert combo.findData("int8-wo") >= 0
    combo.setCurrentIndex(combo.findData("int4-wo"))
    # threads 0 in transformers: adapted to measured decode steps (engine/decode/threads.py)
    assert dialog.effective_engine() == "transformers"
    assert dialog.threads_spin.value() == 0 and dialog.threads_spin.text() == "Automatic (adapts to CPU load)"
    dialog.threads_spin.setValue(1)
    assert dialog.fused_check.isChecked()  # on by default
    assert dialog.compile_check.isEnabled() and not dialog.compile_check.isChecked()
    dialog.compile_check.setChecked(True)
    dialog.fused_check.setChecked(False)  # compiling needs the fused step: off and greyed too
    assert not dialog.compile_check.isEnabled() and not dialog.compile_check.isChecked()
    chosen = dialog.load_settings()
    with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_MS) as ready:
        window.load_model(chosen)
    info = ready.args[0]
    assert info.quantization == "int4-wo" and info.threads == 1 and not info.fused_decode
    assert window.status.device_label.text() == "CPU · 4-bit weights (int4 weight-only), fp32 compute"
    remembered = window.store.last_model()
    assert remembered.quantization == "int4-wo" and remembered.threads == 1
    assert not remembered.fused_decode
    reopened = OpenModelDialog(remembered, {})
    qtbot.addWidget(reopened)
    assert not reopened.fused_check.isChecked()
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as finished:
        window.send_message("What is the capital of France?")
    assert finished.args[1].finish_reason in ("stop", "length")
    assert window.chat_view.messages()[-1].text().strip()


def test_weight_only_is_greyed_out_for_a_gpu_without_torchao(qtbot) -> None:
    no_torchao = {
        "device:cuda": None,
        "quantization:torchao": unavailable("quantization:torchao", "torchao_missing", "not installed"),
    }
    dialog = OpenModelDialog(LoadSettings(quantization="int4-wo", device="cpu"), no_torchao)
    qtbot.addWidget(dialog)
    combo = dialog.quantization_combo
    item = combo.model().item(combo.findData("int4-wo"))
    assert item.isEnabled() and combo.currentData() == "int4-wo"
    dialog.device_combo.setCurrentIndex(dialog.device_combo.findData("cuda"))
    assert not item.isEnabled() and "needs torchao" in item.toolTip()
    assert combo.currentData() == "none"  # the choice that cannot run is not kept
    assert "Weight-only int8/int4 on the GPU: torchao is not installed" in dialog.reasons_label.text()
    dialog.device_combo.setCurrentIndex(dialog.device_combo.findData("cpu"))
    assert item.isEnabled()
    # "Automatic" means the GPU on a machine with one, the CPU on a machine without.
    dialog.device_combo.setCurrentIndex(dialog.device_combo.findData("auto"))
    assert not item.isEnabled()
    cpu_machine = OpenModelDialog(
        LoadSettings(quantization="int8-wo"),
        {"device:cuda": unavailable("device:cuda", "no_cuda", "No CUDA GPU.")},
    )
    qtbot.addWidget(cpu_machine)
    assert cpu_machine.quantization_combo.currentData() == "int8-wo"
    # With torchao on the GPU machine, weight-only stays a GPU choice.
    with_torchao = OpenModelDialog(
        LoadSettings(quantization="int8-wo", device="cuda"),
        {"device:cuda": None, "quantization:torchao": None},
    )
    qtbot.addWidget(with_torchao)
    assert with_torchao.quantization_combo.currentData() == "int8-wo"


def test_compile_option_is_greyed_with_the_reason_when_no_compiler(qtbot) -> None:
    from glmdesk.core.settings import LoadSettings

    reason = unavailable("decode:compile", "no_compiler", "no C++ compiler was found (g++, clang++ or cl)")
    dialog = OpenModelDialog(LoadSettings(compile_decode=True), {"decode:compile": reason})
    qtbot.addWidget(dialog)
    assert not dialog.compile_check.isEnabled() and not dialog.compile_check.isChecked()
    assert "C++ compiler" in dialog.compile_check.toolTip()
    assert "Compile the decode step: No C++ compiler" in dialog.reasons_label.text()
    dialog.fused_check.setChecked(False)
    dialog.fused_check.setChecked(True)
    assert not dialog.compile_check.isEnabled()
    dialog.compile_check.setChecked(True)  # even if set from code, a greyed box does not count
    assert not dialog.load_settings().compile_decode
