"""One name, one meaning: no two classes of glmdesk share a name (a reader who meets
``HistoryError`` or ``TextPart`` anywhere meets the same class)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import glmdesk

ROOT = Path(glmdesk.__file__).parent


def test_no_two_classes_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for file in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{file.relative_to(ROOT.parent)}:{node.lineno}")
    shared = {name: places for name, places in where.items() if len(places) > 1}
    assert len(where) > 200 and not shared, shared
