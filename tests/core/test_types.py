"""The type checker (basedpyright, "basic" rules, settings in pyproject.toml) finds no
error anywhere in glmdesk/, with no baseline to hide one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import glmdesk

ROOT = Path(glmdesk.__file__).parent.parent


@pytest.mark.slow
def test_the_type_checker_finds_no_error() -> None:
    assert not (ROOT / ".basedpyright" / "baseline.json").exists(), "no baseline hides errors"
    checker = Path(sys.executable).with_name("basedpyright")
    assert checker.exists(), "basedpyright is not installed: pip install -e '.[dev]'"
    done = subprocess.run(
        [str(checker), "--outputjson", "--pythonpath", sys.executable],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = json.loads(done.stdout[done.stdout.find("{") :])
    errors = [
        f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message']} ({d.get('rule', '')})"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert report["summary"]["filesAnalyzed"] > 100
    assert not errors, "\n".join(errors)
