"""Models pulled from the hub: where they go and how they are found again, offline.

glmdesk's models folder is ``GLMDESK_MODELS_DIR`` when set, else the folder the user
chose (kept in ``models-folder.txt`` in glmdesk's config folder), else ``models/`` in
glmdesk's data folder. A finished pull is a folder named after the repository (and
the quantization, for GGUF repositories) holding the files and ``glmdesk-pull.json``
(repository, quantization, commit, every file's size and hash, ``complete: true``).
Unfinished pulls live in ``.partial/`` beside them and are never listed.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from glmdesk.core import paths

#: The record a finished pull leaves in its folder.
RECORD = "glmdesk-pull.json"
_CHOICE = "models-folder.txt"


def models_dir() -> Path:
    """glmdesk's models folder (see the module's note); created if missing."""
    chosen = os.environ.get("GLMDESK_MODELS_DIR")
    if not chosen:
        try:
            chosen = (paths.config_dir() / _CHOICE).read_text(encoding="utf-8").strip()
        except OSError:
            chosen = ""
    folder = Path(chosen).expanduser() if chosen else paths.data_dir() / "models"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def choose_models_dir(folder: Path | None) -> None:
    """Keep ``folder`` as the models folder (``None``: back to the default)."""
    choice = paths.config_dir() / _CHOICE
    if folder is None:
        choice.unlink(missing_ok=True)
    else:
        choice.write_text(str(folder), encoding="utf-8")


def partial_dir(folder: Path) -> Path:
    """Where unfinished pulls of the models folder ``folder`` grow."""
    return folder / ".partial"


def folder_name(repo: str, quant: str | None) -> str:
    """The folder of a pull: ``owner--name`` (``--QUANT`` for a GGUF quantization)."""
    name = repo.replace("/", "--")
    if quant:
        name += "--" + re.sub(r"[^A-Za-z0-9_.-]", "_", quant)
    return name


@dataclass(frozen=True)
class PulledModel:
    """A finished pull.

    Attributes:
        repo: The repository.
        quant: Its quantization.
        commit: The commit it was taken at.
        folder: Its folder.
        size_bytes: Its files' bytes.
        pulled: When it finished (UTC, ISO 8601).
    """

    repo: str
    quant: str
    commit: str
    folder: Path
    size_bytes: int
    pulled: str

    @property
    def model_path(self) -> Path:
        """What Open model loads: the folder, or a GGUF file (the first part of a split one)."""
        ggufs = sorted(p for p in self.folder.rglob("*.gguf"))
        return ggufs[0] if ggufs else self.folder


def pulled_models(folder: Path | None = None) -> list[PulledModel]:
    """Every finished pull in the models folder, newest first (unreadable records skipped)."""
    folder = folder or models_dir()
    found = []
    for record in folder.glob(f"*/{RECORD}"):
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            if not data.get("complete"):
                continue
            found.append(
                PulledModel(
                    data["repo"],
                    data["quant"],
                    data["commit"],
                    record.parent,
                    sum(int(f["size"]) for f in data["files"]),
                    data.get("pulled", ""),
                )
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(found, key=lambda m: m.pulled, reverse=True)


def find_pulled(name: str, folder: Path | None = None) -> PulledModel | None:
    """The pulled model ``name`` names: ``owner/repo`` (the newest pull of it) or
    ``owner/repo:QUANT``; case-insensitive; ``None`` when none is here."""
    repo, _, quant = name.strip().partition(":")
    for model in pulled_models(folder):
        if model.repo.lower() == repo.lower() and (not quant or model.quant.lower() == quant.lower()):
            return model
    return None
