"""The type checker (basedpyright, "basic" rules, settings in pyproject.toml) finds no
error in glmdesk/ beyond the ones its baseline lists (.basedpyright/baseline.json, the
errors the code had when the checker was adopted; fix one and rewrite the baseline with
``basedpyright --writebaseline``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import glmdesk

ROOT = Path(glmdesk.__file__).parent.parent


@pytest.mark.slow
def test_the_type_checker_finds_no_new_error() -> None:
    checker = Path(sys.executable).with_name("basedpyright")
    assert checker.exists(), "basedpyright is not installed: pip install -e '.[dev]'"
    done = subprocess.run(
        [str(checker), "--outputjson", "--pythonpath", sys.executable],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    # With fewer errors than the baseline lists, basedpyright first prints a line saying it
    # updated the baseline; the report is the JSON object after it.
    report = json.loads(done.stdout[done.stdout.find("{") :])
    errors = [
        f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message']} ({d.get('rule', '')})"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert report["summary"]["filesAnalyzed"] > 100
    assert not errors, "\n".join(errors)
