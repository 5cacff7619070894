"""The layer rule: core imports neither torch nor Qt; the conversation layer neither;
engine imports no Qt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import glmdesk

ROOT = Path(glmdesk.__file__).parent


def modules(package: str) -> list[str]:
    """Every module under ``package``, found from the files (nothing imported here)."""
    path = ROOT.joinpath(*package.split(".")[1:])
    names = []
    for file in sorted(path.rglob("*.py")):
        parts = file.relative_to(ROOT.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def import_with_blocked(mods: list[str], blocked: list[str]) -> subprocess.CompletedProcess:
    code = (
        "import sys\n"
        + "".join(f"sys.modules[{b!r}] = None\n" for b in blocked)
        + "".join(f"import {m}\n" for m in mods)
        + "print('ok')\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_core_imports_neither_torch_nor_qt():
    out = import_with_blocked(modules("glmdesk.core"), ["torch", "PySide6", "transformers"])
    assert out.returncode == 0, out.stderr


def test_the_conversation_layer_imports_neither_torch_nor_qt():
    out = import_with_blocked(modules("glmdesk.chat"), ["torch", "PySide6", "transformers"])
    assert out.returncode == 0, out.stderr


def test_engine_imports_no_qt():
    engine = [m for m in modules("glmdesk.engine") if not m.endswith("conftest")]
    out = import_with_blocked(engine, ["PySide6", "shiboken6"])
    assert out.returncode == 0, out.stderr


def test_documents_import_neither_torch_nor_qt():
    out = import_with_blocked(modules("glmdesk.documents"), ["torch", "PySide6", "transformers"])
    assert out.returncode == 0, out.stderr


def test_import_linter_contracts_hold():
    """The contracts in pyproject.toml ([tool.importlinter]): core, engine, ui and the cache
    package keep to their layers, transitively where it matters."""
    root = ROOT.parent
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(lint), str(root / "pyproject.toml")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "9 kept, 0 broken" in out.stdout


def test_server_imports_no_qt():
    out = import_with_blocked(modules("glmdesk.server") + ["glmdesk.cli.serve"], ["PySide6", "shiboken6"])
    assert out.returncode == 0, out.stderr
