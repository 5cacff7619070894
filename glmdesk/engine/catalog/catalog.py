"""The GLM catalog shipped with glmdesk: every GLM model, its repositories (original
weights and well-known GGUF uploads), and for each quantization its files, size and
the shape the fit forecast needs. Plain Python (no torch, no Qt).

The data lives in ``resources/catalog/glm_catalog.json`` (its format is described in
``docs/catalog.md``); ``scripts/refresh_catalog.py`` rewrites its file lists and sizes
from the hub where a network exists. A size the file does not give is estimated here as
the parameters counted from the shape times the quantization's bits per weight, and
says so (``size_source == "estimated"``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

from glmdesk.engine.forecast_shape import ModelShape, shape_from_config

#: The catalog format this module reads.
FORMAT = 1


@dataclass(frozen=True)
class Variant:
    """One downloadable form of a model: a repository and a quantization.

    Attributes:
        model: The catalog model's name (``GLM-4.7-Flash``).
        repo: The hub repository (``unsloth/GLM-4.7-Flash-GGUF``).
        format: ``gguf`` (llama.cpp) or ``safetensors`` (transformers).
        quant: ``Q4_K_M``, ``bf16``...
        bits_per_weight: Average bits per weight of the quantization.
        files: The file names, when known (``()``: the hub's list decides at download).
        files_source: ``hub`` (read from the hub) or ``convention`` (the uploader's scheme).
        size_bytes: Bytes of the variant's files.
        size_source: ``hub`` or ``estimated`` (parameters x bits per weight).
    """

    model: str
    repo: str
    format: str
    quant: str
    bits_per_weight: float
    files: tuple[str, ...]
    files_source: str
    size_bytes: int
    size_source: str

    @property
    def key(self) -> str:
        """``repo`` for one-quant repositories' callers and ``repo:quant`` names alike."""
        return f"{self.repo}:{self.quant}"


@dataclass(frozen=True)
class CatalogModel:
    """One GLM model.

    Attributes:
        name: Its name (``GLM-4.5-Air``).
        family: glmdesk's family name (``glm45``).
        released: ``YYYY-MM`` (or the year).
        licence: The licence as the model card names it.
        context: Trained context, in tokens.
        thinking, tools, vision, ocr: What it can do (from the model card).
        params_b: The card's total parameters, in billions.
        active_params_b: Active parameters per token of a mixture of experts, in billions
            (``None`` for a dense model).
        shape_source: ``config.json`` or an ``estimated (...)`` sentence.
        config: The ``config.json`` fields :func:`shape_from_config` reads.
        variants: Its downloadable forms.
    """

    name: str
    family: str
    released: str
    licence: str
    context: int
    thinking: bool
    tools: bool
    vision: bool
    ocr: bool
    params_b: float
    active_params_b: float | None
    shape_source: str
    config: dict = field(repr=False, hash=False, compare=False)
    variants: tuple[Variant, ...] = ()

    @property
    def estimated(self) -> bool:
        """Whether the shape is estimated rather than read from ``config.json``."""
        return self.shape_source.startswith("estimated")

    @functools.cached_property
    def shape(self) -> ModelShape:
        """The shape counted from :attr:`config` (see :mod:`glmdesk.engine.forecast_shape`)."""
        return shape_from_config(self.config, self.name)

    def capabilities(self) -> tuple[str, ...]:
        """``thinking``, ``tools``, ``vision``, ``ocr``: those it has."""
        return tuple(c for c in ("thinking", "tools", "vision", "ocr") if getattr(self, c))


@dataclass(frozen=True)
class Catalog:
    """The catalog file, read.

    Attributes:
        date: The day the file was written or refreshed (``YYYY-MM-DD``).
        written: How (``by hand, without a network`` or ``from the hub``).
        provenance: What was taken from where (a sentence per kind of field).
        models: Every model, in the file's order.
    """

    date: str
    written: str
    provenance: dict
    models: tuple[CatalogModel, ...]

    def variants(self) -> list[tuple[CatalogModel, Variant]]:
        """Every ``(model, variant)`` pair, in the file's order."""
        return [(m, v) for m in self.models for v in m.variants]

    def find(self, repo: str, quant: str | None = None) -> tuple[CatalogModel, Variant] | None:
        """The variant of ``repo`` (case-insensitive) and ``quant`` (any, when ``None``)."""
        for model, variant in self.variants():
            if variant.repo.lower() == repo.lower() and (
                quant is None or variant.quant.lower() == quant.lower()
            ):
                return model, variant
        return None


def catalog_path() -> Path:
    """The catalog file: ``GLMDESK_CATALOG`` when set (a file the refresh script wrote
    elsewhere), else the shipped ``resources/catalog/glm_catalog.json``."""
    import os

    from glmdesk.resources import resource_path

    if os.environ.get("GLMDESK_CATALOG"):
        return Path(os.environ["GLMDESK_CATALOG"])
    return resource_path("catalog", "glm_catalog.json")


def _variant(model: str, params: int, repo: dict, quant: dict) -> Variant:
    bits = float(quant.get("bits_per_weight", 16))
    files = tuple(quant.get("files") or ())
    files_source = quant.get("files_source", "hub" if files else "convention")
    if not files and repo.get("file_pattern"):
        files = (repo["file_pattern"].format(quant=quant["quant"]),)
    size = int(quant.get("size_bytes") or 0)
    return Variant(
        model=model,
        repo=repo["repo"],
        format=repo["format"],
        quant=quant["quant"],
        bits_per_weight=bits,
        files=files,
        files_source=files_source,
        size_bytes=size or int(params * bits / 8),
        size_source=quant.get("size_source", "hub") if size else "estimated",
    )


def parse_catalog(data: dict) -> Catalog:
    """Build a :class:`Catalog` from the file's parsed JSON.

    Raises:
        ValueError: for another format number or a model without the fields every
            entry has (the message names the model).
    """
    if data.get("format") != FORMAT:
        raise ValueError(
            f"The catalog is in format {data.get('format')!r}; this glmdesk reads format {FORMAT}."
        )
    models = []
    for entry in data["models"]:
        try:
            params = shape_from_config(entry["config"], entry["name"]).params
            model = CatalogModel(
                name=entry["name"],
                family=entry["family"],
                released=str(entry.get("released", "")),
                licence=entry["licence"],
                context=int(entry["context"]),
                thinking=bool(entry.get("thinking")),
                tools=bool(entry.get("tools")),
                vision=bool(entry.get("vision")),
                ocr=bool(entry.get("ocr")),
                params_b=float(entry["params_b"]),
                active_params_b=entry.get("active_params_b"),
                shape_source=entry["shape_source"],
                config=entry["config"],
                variants=tuple(
                    _variant(entry["name"], params, repo, quant)
                    for repo in entry["repos"]
                    for quant in repo["quants"]
                ),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"The catalog entry {entry.get('name', '?')} lacks {exc}.") from exc
        models.append(model)
    return Catalog(data["date"], data.get("written", ""), data.get("provenance", {}), tuple(models))


def load_catalog(path: Path | None = None) -> Catalog:
    """Read the catalog file (default: :func:`catalog_path`), once per file and change.

    Raises:
        OSError: the file cannot be read; ``ValueError``: it is not a catalog.
    """
    path = Path(path or catalog_path())
    stat = path.stat()
    return _read(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _read(path: Path, _mtime_ns: int, _size: int) -> Catalog:
    return parse_catalog(json.loads(path.read_text(encoding="utf-8")))
