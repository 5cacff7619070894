"""The fastest engine for a GGUF file: build llama.cpp when it is missing, then switch to it.

A fresh install (``scripts/run-app``) has no llama-cpp-python: PyPI ships it as an sdist
only. The window opens at once on transformers (int4 weight-only for the embedded Q4_1
file, :mod:`glmdesk.engine.backends.transformers.fallback`), while :class:`EngineUpgrade` builds
llama.cpp once on a thread of its own (:func:`glmdesk.engine.llamacpp_build.ensure_llamacpp`,
its stages in the status bar), and reloads the model on llama.cpp between answers
(never during one) when the build is done. Without a compiler, in the packaged app or
after a failed build it says why once, in the model facts, and transformers stays.

The build ends with a build that answered: each candidate (native, without AMX, portable)
is smoke-tested in a child process (:mod:`glmdesk.engine.llamacpp_smoke`), and a build
already installed is tested before the first load that would switch to it; one that
crashed (or answered wrongly) is never loaded, and the facts line says so: the build,
the signal, and what to do (keep transformers, or rebuild).

The model facts (the welcome and the status bar) carry one line naming the engine that
answers and why (:meth:`EngineUpgrade.engine_line`).
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.engine import llamacpp_build
from glmdesk.engine.backends import llama_cpp_available, wants_llamacpp
from glmdesk.ui.common.messages import error_sentence

_QUEUED = Qt.ConnectionType.QueuedConnection


class BuildWorker(QObject):
    """Runs the build on its own thread (one QObject moved to one QThread).

    Signals:
        progressed(BuildProgress): A stage of the build.
        built(str): The wheel that was installed.
        failed(ErrorInfo): Why llama.cpp was not built.
    """

    progressed = Signal(object)
    built = Signal(str)
    failed = Signal(object)

    @Slot(object)
    def run(self, cancel: threading.Event) -> None:
        """Build (or find) and install llama-cpp-python; emit :attr:`built` or :attr:`failed`."""
        try:
            wheel = llamacpp_build.ensure_llamacpp(self.progressed.emit, cancel)
        except GlmdeskError as exc:
            self.failed.emit(exc.info)
            return
        except Exception as exc:  # the builder words its errors; this is a safety net
            detail = f"{exc.__class__.__name__}: {exc}"
            self.failed.emit(
                ErrorInfo(
                    "llamacpp_build_failed", f"llama.cpp could not be built: {detail}", {"detail": detail}
                )
            )
            return
        self.built.emit(str(wheel))


class EngineUpgrade(QObject):
    """Builds llama.cpp for a GGUF model that transformers answers for lack of it.

    Args:
        session: The window's :class:`~glmdesk.ui.session.chat_session.ChatSession`.

    Signals:
        line_changed(str): The engine line of the model facts changed.
        build_finished(bool): The build ended (True: installed; the reload follows
            after the answer being written, if any).
    """

    line_changed = Signal(str)
    build_finished = Signal(bool)
    _run_requested = Signal(object)

    def __init__(self, session, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.state = "idle"  # idle, building, ready, switched, unavailable, failed
        self.progress = None
        self.problem: ErrorInfo | None = None
        self._cancel = threading.Event()
        self._thread: QThread | None = None
        self._worker: BuildWorker | None = None
        session.loader.model_ready.connect(self._on_model_ready)
        session.answer_ended.connect(self._switch_when_idle)
        session.loader.load_finished.connect(self._switch_when_idle)

    # What the facts line says --------------------------------------------------------
    def engine_line(self) -> str:
        """One line: which engine answers and why ("" when no model is in use)."""
        info = self.session.loader.model_info
        if info is None:
            return ""
        if info.engine == "remote":
            return self.tr("Engine: the server at {url}").format(url=info.location)
        settings = self.session.loader.loaded_settings
        auto = settings is not None and settings.engine == "auto"
        if info.engine == "llamacpp":
            if auto:
                return self.tr("Engine: llama.cpp, the fastest here for a GGUF file")
            return self.tr("Engine: llama.cpp, chosen in Open model")
        if info.engine != "transformers":
            return self.tr("Engine: {engine}").format(engine=info.engine)
        how = self.tr("transformers, {quantization}").format(quantization=info.quantization)
        if info.quantization == "none":
            how = self.tr("transformers, {dtype}").format(dtype=info.dtype)
        distrust = next((note for note in info.notes if note.kind == "llamacpp_untrusted"), None)
        if distrust is not None:  # the installed llama.cpp crashed in its smoke test
            return self.tr("Engine: {how}. {why}").format(how=how, why=error_sentence(distrust))
        if not (auto and settings is not None and wants_llamacpp(settings)):  # auto implies settings
            reason = self.tr("chosen in Open model") if not auto else self.tr("the engine for this model")
            return self.tr("Engine: {how}, {reason}").format(how=how, reason=reason)
        if self.state == "building":
            return self.tr("Engine: {how} until llama.cpp is built ({stage})").format(
                how=how, stage=self.stage_text()
            )
        if self.state == "ready":
            return self.tr("Engine: {how}; llama.cpp is built and answers from the next message").format(
                how=how
            )
        if self.problem is not None:
            return self.tr("Engine: {how}. {why}").format(how=how, why=error_sentence(self.problem))
        return self.tr("Engine: {how}").format(how=how)

    def stage_text(self) -> str:
        """The build's stage: ``stage 2/4: compiling 45%`` (translated)."""
        p = self.progress
        if p is None:
            return self.tr("starting")
        if p.stage == "waiting":
            return self.tr("waiting for another glmdesk that builds it")
        names = {
            "downloading": self.tr("downloading"),
            "compiling": self.tr("compiling"),
            "testing": self.tr("testing"),
            "installing": self.tr("installing"),
        }
        text = self.tr("stage {index}/{total}: {stage}").format(
            index=p.index, total=p.total, stage=names.get(p.stage, p.stage)
        )
        if p.units:
            text += f" {100 * p.done // p.units}%"
        return text

    # The build -------------------------------------------------------------------------
    @Slot(object)
    def _on_model_ready(self, _info) -> None:
        if self.state == "ready" and llama_cpp_available():
            self._switch_when_idle()
        elif self.state == "idle" and self._needs_build():
            self.problem = llamacpp_build.build_unavailable()
            if self.problem is not None:
                self.state = "unavailable"
            else:
                self._start()
        self.line_changed.emit(self.engine_line())

    def _needs_build(self) -> bool:
        info, settings = self.session.loader.model_info, self.session.loader.loaded_settings
        return (
            info is not None
            and info.engine == "transformers"
            and settings is not None
            and wants_llamacpp(settings)
            and not llama_cpp_available()
        )

    def _start(self) -> None:
        self.state = "building"
        self._worker = BuildWorker()
        self._thread = QThread()
        self._thread.setObjectName("glmdesk-llamacpp-build")
        self._worker.moveToThread(self._thread)
        self._run_requested.connect(self._worker.run, _QUEUED)
        self._worker.progressed.connect(self._on_progressed, _QUEUED)
        self._worker.built.connect(self._on_built, _QUEUED)
        self._worker.failed.connect(self._on_failed, _QUEUED)
        self._thread.start()
        self._run_requested.emit(self._cancel)

    @Slot(object)
    def _on_progressed(self, progress) -> None:
        self.progress = progress
        self.line_changed.emit(self.engine_line())

    @Slot(str)
    def _on_built(self, _wheel: str) -> None:
        self.state = "ready"
        self.session.loader.check_options()  # Open model offers the llama.cpp engine from now on
        self.line_changed.emit(self.engine_line())
        self.build_finished.emit(True)
        self._switch_when_idle()

    @Slot(object)
    def _on_failed(self, error: ErrorInfo) -> None:
        self.state, self.problem = "failed", error
        self.line_changed.emit(self.engine_line())
        self.build_finished.emit(False)

    @Slot()
    def _switch_when_idle(self) -> None:
        """Reload the model on llama.cpp once no answer is written and nothing loads."""
        session = self.session
        if self.state != "ready" or session.is_streaming() or session.loader.is_loading():
            return
        if not self._needs_build_done():
            return
        self.state = "switched"
        session.loader.load_model(session.loader.loaded_settings)

    def _needs_build_done(self) -> bool:
        info, settings = self.session.loader.model_info, self.session.loader.loaded_settings
        return (
            info is not None
            and info.engine == "transformers"
            and settings is not None
            and wants_llamacpp(settings)
        )

    def shutdown(self) -> None:
        """Stop a build (pip is terminated) and end its thread. Idempotent."""
        self._cancel.set()
        if self._thread is not None:
            self._thread.quit()
            self._thread.wait()
            self._thread = None
