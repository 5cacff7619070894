"""File -> Get a model: the GLM catalog with a fit mark for this machine, search,
filters, "best that fits" first, and downloads in rows of their own.

The page is a window of its own that never blocks the chat: pulls run on a
:class:`~glmdesk.ui.models.pull_worker.PullWorker` thread, and closing the page only
hides it (downloads go on). A finished model is added to the recent models (so Open
model lists it) and its row's Load button loads it with the engine the forecast chose.
The catalog always shows; when the hub does not answer, the page says "not reachable".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QThread, Signal, Slot
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from glmdesk.engine.catalog.catalog import Catalog, CatalogModel, Variant, load_catalog
from glmdesk.engine.catalog.fit import Fit, Machine, best_first_key, fit, this_machine
from glmdesk.engine.catalog.hub_files import save_token
from glmdesk.engine.catalog.pulled import PulledModel, choose_models_dir, models_dir, pulled_models
from glmdesk.engine.forecast import gib
from glmdesk.ui.models.download_list import DownloadList
from glmdesk.ui.models.pull_worker import PullWorker

_MARK_COLOURS = {"fits": "#27ae60", "slow": "#d68910", "too_big": "#c0392b"}
COLUMNS = ("fit", "model", "download", "size", "runs", "why")


class GetModelDialog(QDialog):
    """The "Get a model" page (object name ``get_model_dialog``).

    Args:
        store: The ``SettingsStore`` (finished models join its recent models), or ``None``.
        parent: The main window.
        catalog: The catalog (default: the shipped one).
        machine: Reads this machine's memory and disk (default: NVML, psutil, the
            models folder's disk); tests pass fixed figures.

    Signals:
        load_requested(object): Load these :class:`~glmdesk.core.settings.LoadSettings`.
    """

    load_requested = Signal(object)
    _probe_requested = Signal()

    def __init__(
        self,
        store=None,
        parent: QWidget | None = None,
        catalog: Catalog | None = None,
        machine: Callable[[], Machine] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("get_model_dialog")
        self.setWindowTitle(self.tr("Get a model"))
        self.setModal(False)
        self.resize(1100, 680)
        self.catalog = catalog or load_catalog()
        self._read_machine = machine or (lambda: this_machine(models_dir()))
        self.machine = self._read_machine()
        self._token: str | None = None  # typed in this session; else the worker reads the keyring
        self.rows: list[tuple[CatalogModel, Variant, Fit]] = []
        self._pulled: list[PulledModel] = []
        self._threads: list[QThread] = []
        self.downloads = DownloadList(store, lambda: self._token, self)
        self.downloads.load_requested.connect(self.load_requested)
        self.downloads.model_pulled.connect(self.refresh)
        self.prober = self._start_worker("glmdesk-hub-probe")
        self._probe_requested.connect(self.prober.probe)
        self.prober.reachability_checked.connect(self._on_reachability)
        self._build()
        self.refresh()
        self.check_hub()
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        if parent is not None:
            parent.installEventFilter(self)

    # Building ----------------------------------------------------------------------
    def _start_worker(self, name: str) -> PullWorker:
        thread = QThread(self)
        thread.setObjectName(name)
        worker = PullWorker()
        worker.moveToThread(thread)
        thread.finished.connect(worker.deleteLater)
        thread.start()
        self._threads.append(thread)
        return worker

    def _build(self) -> None:
        self.search = QLineEdit()
        self.search.setObjectName("catalog_search")
        self.search.setPlaceholderText(self.tr("Search models and repositories"))
        self.family = QComboBox()
        self.family.setObjectName("catalog_family")
        self.family.addItem(self.tr("All families"), "")
        for family in sorted({m.family for m in self.catalog.models}):
            self.family.addItem(family, family)
        self.capability = QComboBox()
        self.capability.setObjectName("catalog_capability")
        for label, key in (
            (self.tr("Any capability"), ""),
            (self.tr("Thinking"), "thinking"),
            (self.tr("Tools"), "tools"),
            (self.tr("Vision"), "vision"),
            (self.tr("OCR"), "ocr"),
        ):
            self.capability.addItem(label, key)
        self.only_fits = QCheckBox(self.tr("Only what runs here"))
        self.sort = QComboBox()
        self.sort.setObjectName("catalog_sort")
        for label, key in (
            (self.tr("Best that fits"), "best"),
            (self.tr("Name"), "name"),
            (self.tr("Size"), "size"),
        ):
            self.sort.addItem(label, key)
        filters = QHBoxLayout()
        filters.addWidget(self.search, 2)
        for widget in (self.family, self.capability, self.only_fits, QLabel(self.tr("Sort:")), self.sort):
            filters.addWidget(widget)
        self.status = QLabel()
        self.status.setObjectName("catalog_status")
        self.status.setWordWrap(True)
        self.machine_label = QLabel(self._machine_text())
        self.machine_label.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("catalog_table")
        self.table.setHorizontalHeaderLabels(
            [
                self.tr("Fit"),
                self.tr("Model"),
                self.tr("Download"),
                self.tr("Size"),
                self.tr("Runs"),
                self.tr("Why"),
            ]
        )
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        self.download_button = QPushButton(self.tr("Download"))
        self.download_button.setObjectName("download_button")
        self.download_button.setEnabled(False)
        self.folder_label = QLabel()
        self.folder_label.setObjectName("models_folder")
        self.folder_button = QPushButton(self.tr("Change..."))
        self.token_button = QPushButton(self.tr("Hub token..."))
        actions = QHBoxLayout()
        actions.addWidget(self.folder_label, 1)
        for button in (self.folder_button, self.token_button, self.download_button):
            actions.addWidget(button)
        layout = QVBoxLayout(self)
        for item in (filters, self.status, self.machine_label, self.table, actions, self.downloads):
            if isinstance(item, QHBoxLayout):
                layout.addLayout(item)
            else:
                layout.addWidget(item)
        layout.setStretchFactor(self.table, 1)
        self._show_folder()
        self.search.textChanged.connect(self.refresh)
        for combo in (self.family, self.capability, self.sort):
            combo.currentIndexChanged.connect(self.refresh)
        self.only_fits.toggled.connect(self.refresh)
        self.table.itemSelectionChanged.connect(self._update_button)
        self.table.itemDoubleClicked.connect(self.download_selected)
        self.download_button.clicked.connect(self.download_selected)
        self.folder_button.clicked.connect(self._choose_folder)
        self.token_button.clicked.connect(self._ask_token)

    def _machine_text(self) -> str:
        m = self.machine
        gpu = (
            self.tr("{gpu} free on the GPU").format(gpu=gib(m.gpu_free))
            if m.gpu_free is not None
            else self.tr("no GPU")
        )
        text = self.tr("This computer: {gpu}, {ram} of RAM available").format(
            gpu=gpu, ram=gib(m.ram_available)
        )
        if m.disk_free is not None:
            text += self.tr(", {disk} free on disk").format(disk=gib(m.disk_free))
        return text + self.tr(". Marks size the KV cache for 32K tokens (or the model's context).")

    def _show_folder(self) -> None:
        self.folder_label.setText(self.tr("Models folder: {folder}").format(folder=models_dir()))

    # The table ---------------------------------------------------------------------
    def _matches(self, model: CatalogModel, variant: Variant, result: Fit) -> bool:
        text = self.search.text().strip().lower()
        if text and text not in f"{model.name} {variant.repo}:{variant.quant}".lower():
            return False
        family, capability = self.family.currentData(), self.capability.currentData()
        if family and model.family != family:
            return False
        if capability and not getattr(model, capability):
            return False
        return not (self.only_fits.isChecked() and not result.runs)

    @Slot()
    def refresh(self) -> None:
        """Fit every variant on this machine, filter, sort and show the rows."""
        rows = []
        for model, variant in self.catalog.variants():
            result = fit(model, variant, self.machine)
            if self._matches(model, variant, result):
                rows.append((model, variant, result))
        key = self.sort.currentData()
        if key == "name":
            rows.sort(key=lambda r: (r[0].name, r[1].repo, r[1].quant))
        elif key == "size":
            rows.sort(key=lambda r: r[1].size_bytes)
        else:
            rows.sort(key=lambda r: best_first_key(*r))
        self.rows = rows
        self._pulled = pulled_models(models_dir())
        self.table.setRowCount(len(rows))
        for index, (model, variant, result) in enumerate(rows):
            self._fill_row(index, model, variant, result)
        self._update_button()

    def _pulled_as(self, variant: Variant) -> PulledModel | None:
        """The finished pull of ``variant`` (a GGUF repository's: of its quantization)."""
        for pulled in self._pulled:
            same_quant = variant.format != "gguf" or pulled.quant.lower() == variant.quant.lower()
            if pulled.repo.lower() == variant.repo.lower() and same_quant:
                return pulled
        return None

    def _fill_row(self, index: int, model: CatalogModel, variant: Variant, result: Fit) -> None:
        marks = {"fits": self.tr("Fits"), "slow": self.tr("Fits, slower"), "too_big": self.tr("Too big")}
        speeds = {"fast": self.tr("fast"), "medium": self.tr("medium"), "slow": self.tr("slow"), "": ""}
        size = gib(variant.size_bytes) + (
            self.tr(" (estimated)") if variant.size_source == "estimated" else ""
        )
        if self._pulled_as(variant) is not None:
            size += self.tr(", downloaded")
        runs = f"{self.how_text(result)}, {speeds[result.speed]}" if result.how and result.runs else ""
        cells = (
            marks[result.mark],
            model.name,
            f"{variant.repo}:{variant.quant}",
            size,
            runs,
            self.why_text(result),
        )
        tip = self.tr("Licence: {licence}. Context: {context} tokens. {caps}. Shape: {shape}.").format(
            licence=model.licence,
            context=model.context,
            caps=", ".join(model.capabilities()) or self.tr("chat"),
            shape=model.shape_source,
        )
        for column, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(tip if column != len(cells) - 1 else text)
            if column == 0:
                item.setForeground(QBrush(QColor(_MARK_COLOURS[result.mark])))
            self.table.setItem(index, column, item)

    def how_text(self, result: Fit) -> str:
        """How the variant would run, in the user's language."""
        names = {
            "GPU": self.tr("GPU"),
            "GPU, NF4": self.tr("GPU, NF4"),
            "GPU + experts in RAM": self.tr("GPU + experts in RAM"),
            "GPU + CPU layers": self.tr("GPU + CPU layers"),
            "CPU": self.tr("CPU"),
        }
        return names.get(result.how, result.how)

    def why_text(self, result: Fit) -> str:
        """The fit's one-line why, in the user's language (figures as :mod:`fit` gives them)."""
        whole, f, m = result.whole or result.forecast, result.forecast, self.machine
        tokens = result.context
        ctx = f"{tokens // 1024}K" if tokens % 1024 == 0 else str(tokens)
        head = self.tr("weights {weights} + KV at {context} {kv}").format(
            weights=gib(whole.weights), context=ctx, kv=gib(whole.kv)
        )
        gpu = gib(m.gpu_free) if m.gpu_free is not None else ""
        if not result.how:
            have = self.tr("{ram} RAM").format(ram=gib(m.ram_available))
            if m.gpu_free is not None:
                have = self.tr("{gpu} GPU + {ram} RAM").format(gpu=gpu, ram=gib(m.ram_available))
            text = self.tr("{head}: needs {total}; {have} is too little").format(
                head=head, total=gib(whole.total), have=have
            )
        elif result.how == "GPU":
            text = self.tr("{head} = {need} <= {gpu} GPU").format(head=head, need=gib(f.gpu), gpu=gpu)
        elif result.how == "GPU, NF4":
            text = self.tr("{head} > {gpu} GPU in bf16; fits in NF4 ({need} on the GPU)").format(
                head=head, gpu=gpu, need=gib(f.gpu)
            )
        elif result.how == "GPU + CPU layers":
            text = self.tr(
                "{head} > {gpu} GPU; {layers} of {total} layers on the GPU ({need} on the GPU, {ram} in RAM)"
            ).format(
                head=head,
                gpu=gpu,
                layers=result.gpu_layers,
                total=result.layers,
                need=gib(f.gpu),
                ram=gib(f.ram),
            )
        elif result.how.startswith("GPU +"):
            text = self.tr(
                "{head} > {gpu} GPU; fits with experts in RAM ({need} on the GPU, {ram} in RAM)"
            ).format(head=head, gpu=gpu, need=gib(f.gpu), ram=gib(f.ram))
        elif m.gpu_free is not None:
            text = self.tr("{head} > {gpu} GPU; runs on the CPU ({need} of {ram} RAM)").format(
                head=head, gpu=gpu, need=gib(f.ram), ram=gib(m.ram_available)
            )
        else:
            text = self.tr("{head} = {need} <= {ram} RAM (no GPU)").format(
                head=head, need=gib(f.ram), ram=gib(m.ram_available)
            )
        if result.disk_short:
            text = (
                self.tr("the download is larger than the free disk ({disk}); ").format(
                    disk=gib(m.disk_free or 0)
                )
                + text
            )
        return text

    def selected(self) -> tuple[CatalogModel, Variant, Fit] | None:
        """The selected row's model, variant and fit."""
        rows = self.table.selectionModel().selectedRows()
        return self.rows[rows[0].row()] if rows else None

    def _update_button(self) -> None:
        chosen = self.selected()
        self.download_button.setEnabled(chosen is not None and self.downloads.job_for(chosen[1]) is None)

    # The hub -----------------------------------------------------------------------
    def check_hub(self) -> None:
        """Ask (off the GUI thread) whether the hub is reachable."""
        self.status.setText(self.tr("Catalog of {date}. Checking the hub...").format(date=self.catalog.date))
        self._probe_requested.emit()

    @Slot(bool, str)
    def _on_reachability(self, reachable: bool, reason: str) -> None:
        if reachable:
            self.status.setText(
                self.tr("Catalog of {date}; the hub is reachable.").format(date=self.catalog.date)
            )
        else:
            self.status.setText(
                self.tr(
                    "Catalog of {date}, shipped with glmdesk. The hub is not reachable ({reason}): "
                    "downloads wait until it is."
                ).format(date=self.catalog.date, reason=reason)
            )

    # Downloads ---------------------------------------------------------------------
    @Slot()
    def download_selected(self) -> None:
        """Start downloading the selected variant in a row of its own (or load it when
        it is downloaded already)."""
        chosen = self.selected()
        if chosen is None or self.downloads.job_for(chosen[1]) is not None:
            return
        _model, variant, result = chosen
        pulled = self._pulled_as(variant)
        if pulled is not None:
            self.downloads.load(pulled.model_path, result.engine)
            return
        self.downloads.start(variant, result.engine)
        self._update_button()

    # Folder and token --------------------------------------------------------------
    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Models folder"), str(models_dir()))
        if folder:
            choose_models_dir(Path(folder))
            self._show_folder()
            self.machine = self._read_machine()
            self.machine_label.setText(self._machine_text())
            self.refresh()

    def _ask_token(self) -> None:
        token, ok = QInputDialog.getText(
            self,
            self.tr("Hub token"),
            self.tr("A Hugging Face token with read access, for gated models (kept in the system keyring):"),
            QLineEdit.EchoMode.Password,
        )
        if ok:
            self._token = token.strip() or None
            save_token(self._token)

    # Lifetime ----------------------------------------------------------------------
    def closeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Closing the page hides it; downloads go on."""
        self.hide()
        event.ignore()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        """The main window closing stops the downloads (their bytes are kept)."""
        if watched is self.parent() and event.type() == QEvent.Type.Close:
            self.shutdown()
        return False

    @Slot()
    def shutdown(self) -> None:
        """Pause every download and end the worker threads. Idempotent."""
        self.downloads.shutdown()
        for thread in self._threads:
            thread.quit()
            thread.wait(15_000)
        self._threads.clear()
