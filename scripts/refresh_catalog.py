#!/usr/bin/env python3
"""Refresh glmdesk's GLM catalog from the hub: file names, sizes and dates.

Usage (from the repository root, where a network exists)::

    .venv/bin/python scripts/refresh_catalog.py            # rewrite resources/catalog/glm_catalog.json
    .venv/bin/python scripts/refresh_catalog.py --dry-run  # print what would change
    .venv/bin/python scripts/refresh_catalog.py --out x.json --config

For every repository in the catalog it asks the hub (``huggingface_hub``'s
``model_info(files_metadata=True)``, through ``HF_ENDPOINT`` when set, with the token
in ``HF_TOKEN`` or the keyring for gated ones) for its files and writes, per
quantization, the files a ``glmdesk pull`` takes (the same selection:
:func:`glmdesk.engine.catalog.hub_files.select_files`), their total size and
``size_source: "hub"``, ``files_source: "hub"``. With ``--config`` it also reads each
original repository's ``config.json`` and replaces the model's shape fields with it,
setting ``shape_source`` to ``config.json`` (ChatGLM's own names mapped as the
catalog's note says). A repository the hub does not answer for keeps what it had and
is named at the end; the file's ``date`` and ``written`` say when and how.

Nothing else in the catalog (licence, context, capabilities, which repositories are
listed) is changed: those come from the model cards and are edited by hand.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from glmdesk.engine.catalog.hub_files import PullError, list_files, saved_token, select_files  # noqa: E402

CATALOG = ROOT / "resources" / "catalog" / "glm_catalog.json"
#: ChatGLM ``config.json`` names -> the names the catalog (transformers) uses.
CHATGLM_NAMES = {
    "num_layers": "num_hidden_layers",
    "ffn_hidden_size": "intermediate_size",
    "padded_vocab_size": "vocab_size",
    "multi_query_group_num": "num_key_value_heads",
    "seq_length": "max_position_embeddings",
    "add_qkv_bias": "attention_bias",
}
#: Shape fields kept from a ``config.json``.
SHAPE_FIELDS = {
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "attention_bias", "max_position_embeddings", "moe_intermediate_size",
    "n_routed_experts", "n_shared_experts", "first_k_dense_replace", "q_lora_rank", "kv_lora_rank",
    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "use_qk_norm", "tie_word_embeddings",
}  # fmt: skip


def refresh_repo(repo: dict, token: str | None) -> list[str]:
    """Rewrite one repository entry's quantizations from the hub; returns the changes."""
    changes = []
    _commit, files = list_files(repo["repo"], token)
    for quant in repo["quants"]:
        wanted = quant["quant"] if repo["format"] == "gguf" else None
        try:
            _, chosen = select_files(repo["repo"], files, wanted)
        except PullError as exc:
            changes.append(f"{repo['repo']} {quant['quant']}: {exc.message}")
            continue
        size = sum(f.size for f in chosen)
        names = sorted(f.path for f in chosen)
        if quant.get("size_bytes") != size or quant.get("files") != names:
            changes.append(f"{repo['repo']} {quant['quant']}: {size} bytes in {len(names)} files")
        quant.update(files=names, files_source="hub", size_bytes=size, size_source="hub")
    return changes


def refresh_config(model: dict, token: str | None) -> str | None:
    """Replace a model's shape fields with its original repository's ``config.json``."""
    from huggingface_hub import hf_hub_download

    from glmdesk.engine.catalog.hub_files import hub_endpoint

    original = next((r["repo"] for r in model["repos"] if r["format"] == "safetensors"), None)
    if original is None:
        return None
    path = hf_hub_download(original, "config.json", token=token or None, endpoint=hub_endpoint())
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    text = raw.get("text_config") or raw
    config = {CHATGLM_NAMES.get(k, k): v for k, v in text.items()}
    shape = {k: v for k, v in config.items() if k in SHAPE_FIELDS}
    if not {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"} <= shape.keys():
        return f"{original}: config.json lacks a decoder's fields; kept as it was"
    model["config"] = shape
    model["shape_source"] = "config.json" + (" (text decoder only)" if "text_config" in raw else "")
    return f"{original}: shape from config.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", type=Path, default=CATALOG, help="the catalog to read")
    parser.add_argument("--out", type=Path, help="where to write (default: over --catalog)")
    parser.add_argument("--config", action="store_true", help="also take each model's shape from config.json")
    parser.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    args = parser.parse_args(argv)
    data = json.loads(args.catalog.read_text(encoding="utf-8"))
    token = saved_token()
    failed = []
    for model in data["models"]:
        if args.config:
            try:
                note = refresh_config(model, token)
            except Exception as exc:  # the hub's errors, a missing config.json
                note = f"{model['name']}: config.json not read ({type(exc).__name__})"
            if note:
                print(note)
        for repo in model["repos"]:
            try:
                for change in refresh_repo(repo, token):
                    print(change)
            except PullError as exc:
                failed.append(f"{repo['repo']}: {exc.message}")
    if failed:
        print("\nNot refreshed (kept as they were):\n  " + "\n  ".join(failed))
    if args.dry_run:
        return 1 if failed else 0
    data["date"] = datetime.date.today().isoformat()
    data["written"] = "from the hub" + (f", except {len(failed)} repositories" if failed else "")
    out = args.out or args.catalog
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
