"""Tiny GGUFs made by llama.cpp's own converter (``convert_hf_to_gguf.py``).

The converter ships in llama-cpp-python's source distribution (``vendor/llama.cpp``), with
the ``gguf-py`` package of the same commit, which knows architectures the installed
``gguf`` release may not (``glm5-next``). It is found, in this order, at:

- ``$GLMDESK_LLAMACPP_SRC``: a ``vendor/llama.cpp`` folder, or the sdist's top folder;
- ``~/.cache/glmdesk/llamacpp-src/llama_cpp_python-<version>/vendor/llama.cpp``, filled by
  ``python -m tests.helpers.llamacpp_convert --fetch`` (``pip download`` of the sdist of the
  installed llama-cpp-python version from the package index, then only the converter's
  files extracted: about 2 MB);
- ``/tmp/lcp/llama_cpp_python-<version>/vendor/llama.cpp`` (an unpacked sdist).

Without it, :func:`converter_or_skip` skips the test with a sentence that says how to get it.

The converter runs in a child process (its ``gguf-py`` must not replace the installed
``gguf`` in the test process), with two stand-ins the tiny checkpoints need:

- the pre-tokenizer: the converter names it by the sha256 of the ids a tokenizer gives a
  fixed text, and refuses hashes it does not know. The tiny tokenizers (``CORPUS``-trained
  byte-level BPE) are stand-ins for GLM's, so the hash is new; the helper names ``glm4``,
  the pre-tokenizer the converter gives GLM-4-0414, GLM-4.5-Air and GLM-4.7-Flash (the
  published tokenizers' hashes in ``conversion/base.py::get_vocab_base_pre``);
- the ``config.json``: the converter reads the published files' ``first_k_dense_replace``
  (GLM-4.7-Flash, GLM-5.3-Flash) and GLM-5.3-Flash's ``linear_attn_config`` (``num_heads``,
  ``head_dim``, ``short_conv_kernel_size``, ``gate_lower_bound``) and ``mla_use_nope``,
  which transformers 5.24 reads on load but writes back as ``mlp_layer_types`` and
  ``linear_*`` fields; a copy of the folder (weights linked) gets them from the same values.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

#: the converter's own files inside ``vendor/llama.cpp`` (all it imports)
CONVERTER_FILES = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/")

_RUNNER = """
import sys, runpy
root = sys.argv[1]
sys.path[:0] = [root, root + "/gguf-py"]
from conversion.base import TextModel
TextModel.get_vocab_base_pre = lambda self, tokenizer: "glm4"
sys.argv = [root + "/convert_hf_to_gguf.py", *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def llamacpp_version() -> str:
    """The installed llama-cpp-python's version (``"0.3.36"``)."""
    from importlib.metadata import version

    return version("llama-cpp-python")


def cache_root() -> Path:
    """``~/.cache/glmdesk/llamacpp-src`` (``$XDG_CACHE_HOME`` respected)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "glmdesk" / "llamacpp-src"


def find_converter() -> Path | None:
    """The ``vendor/llama.cpp`` folder holding ``convert_hf_to_gguf.py`` for the installed
    llama-cpp-python, or None where none of the places in the module docstring has it."""
    sdist = f"llama_cpp_python-{llamacpp_version()}"
    places = []
    if env := os.environ.get("GLMDESK_LLAMACPP_SRC"):
        places += [Path(env), Path(env) / "vendor" / "llama.cpp"]
    places += [
        cache_root() / sdist / "vendor" / "llama.cpp",
        Path("/tmp/lcp") / sdist / "vendor" / "llama.cpp",
    ]
    for place in places:
        if (place / "convert_hf_to_gguf.py").is_file() and (place / "gguf-py" / "gguf").is_dir():
            return place
    return None


def converter_or_skip() -> Path:
    """:func:`find_converter`, or ``pytest.skip`` with how to fetch it."""
    import pytest

    found = find_converter()
    if found is None:
        pytest.skip(
            f"llama.cpp's converter (llama-cpp-python {llamacpp_version()}'s source) is not here: "
            "run `python -m tests.helpers.llamacpp_convert --fetch` (needs the package index) "
            "or set GLMDESK_LLAMACPP_SRC"
        )
    return found


def fetch(into: Path | None = None) -> Path:
    """Download the installed version's sdist with pip and extract the converter's files
    into ``into`` (default :func:`cache_root`); return the ``vendor/llama.cpp`` folder.

    Raises:
        subprocess.CalledProcessError: pip could not download it (no package index).
    """
    into = into or cache_root()
    sdist = f"llama_cpp_python-{llamacpp_version()}"
    target = into / sdist / "vendor" / "llama.cpp"
    if (target / "convert_hf_to_gguf.py").is_file():
        return target
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         f"llama-cpp-python=={llamacpp_version()}", "-d", str(into)],
        check=True,
    )  # fmt: skip
    prefix = f"{sdist}/vendor/llama.cpp/"
    with tarfile.open(into / f"{sdist}.tar.gz") as tar:
        wanted = [
            m for m in tar.getmembers()
            if m.name.startswith(prefix) and m.name[len(prefix):].startswith(CONVERTER_FILES)
        ]  # fmt: skip
        tar.extractall(into, members=wanted, filter="data")
    (into / f"{sdist}.tar.gz").unlink()
    return target


def _published_config(folder: Path, into: Path) -> Path:
    """``folder`` itself, or a copy (weights linked) whose config carries the fields of the
    published ``config.json`` the converter reads and transformers 5.24 writes otherwise:
    ``first_k_dense_replace`` (from ``mlp_layer_types``; GLM-4.7-Flash, GLM-5.3-Flash) and
    GLM-5.3-Flash's ``linear_attn_config`` and ``mla_use_nope``."""
    config = json.loads((folder / "config.json").read_text())
    text = config.get("text_config", config)
    added = {}
    if "first_k_dense_replace" not in text and (kinds := text.get("mlp_layer_types")):
        added["first_k_dense_replace"] = next((i for i, k in enumerate(kinds) if k != "dense"), len(kinds))
    if config.get("model_type") == "glm5_next":
        added["linear_attn_config"] = {
            "num_heads": text["linear_num_heads"],
            "head_dim": text["linear_head_dim"],
            "short_conv_kernel_size": text["linear_conv_kernel_dim"],
            "gate_lower_bound": text["linear_lower_bound"],
        }
        added["mla_use_nope"] = text["qk_rope_head_dim"] == 0
    if not added:
        return folder
    text.update(added)
    into.mkdir(parents=True, exist_ok=True)
    for item in folder.iterdir():
        if item.name != "config.json" and not (into / item.name).exists():
            (into / item.name).symlink_to(item.resolve())
    (into / "config.json").write_text(json.dumps(config, indent=2))
    return into


def convert(folder: Path, path: Path, converter: Path, extra: tuple[str, ...] = ()) -> Path:
    """Convert the Hugging Face folder ``folder`` to the F32 GGUF ``path`` with llama.cpp's
    converter at ``converter`` (``vendor/llama.cpp``); ``extra`` are more converter flags
    (``--no-mtp``). Returns ``path``.

    Raises:
        RuntimeError: the converter failed; the message ends with its last output lines.
    """
    source = _published_config(folder, path.with_name(path.stem + "-published"))
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _RUNNER,
            str(converter),
            str(source),
            "--outfile",
            str(path),
            "--outtype",
            "f32",
            *extra,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ""},
        timeout=300,
    )
    if done.returncode != 0 or not path.is_file():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise RuntimeError(f"llama.cpp's converter failed on {folder.name}:\n{tail}")
    return path


if __name__ == "__main__":
    if sys.argv[1:] == ["--fetch"]:
        print(fetch())
    else:
        sys.exit("usage: python -m tests.helpers.llamacpp_convert --fetch")
