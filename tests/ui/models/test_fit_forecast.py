"""Open model's "Will it fit" line: shown before loading, updated as the choices
change, and a load that cannot fit refused up front with the numbers. The memory
budget is injected (``fit_budget``), so a small GPU or RAM is faked without touching
transformers or the machine's memory."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDialog

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.spec import unavailable
from glmdesk.engine.forecast import GIB, Budget
from glmdesk.ui.models.open_model_dialog import OpenModelDialog
from tests.helpers.gguf_models import write_glm45_gguf
from tests.helpers.glm45_models import write_glm45

ROOMY = Budget(gpu_free=80 * GIB, ram_available=64 * GIB, gpu_name="NVIDIA H200")
GPU = {"device:cuda": None}  # a GPU found: "auto" means CUDA
LLAMA_GPU = {"engine:llamacpp": None, "llamacpp:gpu": None, **GPU}


@pytest.fixture(scope="module")
def glm45(tmp_path_factory):
    return write_glm45(tmp_path_factory.mktemp("fit") / "GLM-4.5-Air")


def open_dialog(qtbot, settings: LoadSettings, availability: dict, budget: Budget) -> OpenModelDialog:
    dialog = OpenModelDialog(settings, availability, fit_budget=lambda: budget)
    qtbot.addWidget(dialog)
    return dialog


def test_the_forecast_shows_and_follows_quantization(qtbot, glm45) -> None:
    dialog = open_dialog(qtbot, LoadSettings(model=str(glm45), device="cpu"), {}, ROOMY)
    line = dialog.fit_forecast
    assert not line.isHidden() and line.text().startswith("Will it fit: weights ")
    assert "in system RAM" in line.text() and "64.0 GiB of RAM available" in line.text()
    before = line.forecast.weights
    dialog.quantization_combo.setCurrentIndex(dialog.quantization_combo.findData("int4-wo"))
    assert line.forecast.weights < before and line.refusal() == ""


def test_a_load_that_cannot_fit_the_gpu_is_refused_with_the_numbers(qtbot, glm45) -> None:
    small = Budget(gpu_free=1 << 20, ram_available=64 * GIB)
    dialog = open_dialog(qtbot, LoadSettings(model=str(glm45)), GPU, small)
    dialog.show()
    assert dialog.fit_forecast.forecast.on_gpu
    dialog.accept()
    assert dialog.isVisible() and dialog.result() != QDialog.DialogCode.Accepted
    refusal = dialog.fit_forecast.refusal()
    assert refusal.startswith("It cannot fit: the GPU needs about ") and "but has 1 MiB free" in refusal
    assert refusal in dialog.fit_forecast.text()


def test_a_load_that_cannot_fit_the_ram_is_refused(qtbot, glm45) -> None:
    dialog = open_dialog(qtbot, LoadSettings(model=str(glm45), device="cpu"), {}, Budget(None, 1 << 20))
    dialog.show()
    dialog.accept()
    assert dialog.result() != QDialog.DialogCode.Accepted
    assert "of system RAM but 1 MiB is available" in dialog.fit_forecast.refusal()


def test_a_load_that_fits_is_accepted(qtbot, glm45) -> None:
    dialog = open_dialog(qtbot, LoadSettings(model=str(glm45)), GPU, ROOMY)
    dialog.show()
    with qtbot.waitSignal(dialog.accepted, timeout=2000):
        dialog.accept()
    assert (
        "on the GPU" in dialog.fit_forecast.text()
        and "80.0 GiB free on the GPU" in dialog.fit_forecast.text()
    )


def test_experts_in_ram_moves_the_experts_off_the_gpu_in_the_forecast(qtbot, tmp_path) -> None:
    gguf = write_glm45_gguf(tmp_path / "tiny-moe.gguf")
    dialog = open_dialog(qtbot, LoadSettings(model=str(gguf)), LLAMA_GPU, ROOMY)
    assert dialog.effective_engine() == "llamacpp"
    line, check = dialog.fit_forecast, dialog.engine_options["llamacpp"].field("experts_in_ram")
    assert check.isEnabled() and not line.forecast.experts_in_ram
    all_on_gpu = line.forecast.gpu
    check.setChecked(True)
    assert line.forecast.experts_in_ram and line.forecast.gpu < all_on_gpu - line.forecast.experts
    assert "experts" in line.text() and "in system RAM" in line.text()
    dialog.engine_options["llamacpp"].field("n_ctx").setValue(4096)
    assert line.forecast.context == 4096
    assert dialog.load_settings().experts_in_ram


def test_experts_in_ram_needs_a_gpu_build(qtbot, tmp_path) -> None:
    gguf = write_glm45_gguf(tmp_path / "tiny-moe.gguf")
    cpu_build = {
        "engine:llamacpp": None,
        "llamacpp:gpu": unavailable("llamacpp:gpu", "no_gpu_offload", "no GPU offload (a CPU build)"),
    }
    dialog = open_dialog(qtbot, LoadSettings(model=str(gguf)), cpu_build, ROOMY)
    check = dialog.engine_options["llamacpp"].field("experts_in_ram")
    assert not check.isEnabled() and "CPU build" in check.toolTip()
    assert not dialog.fit_forecast.forecast.on_gpu
