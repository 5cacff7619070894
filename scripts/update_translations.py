#!/usr/bin/env python3
"""Extract, translate and compile glmdesk's interface strings.

Usage (from the repository root, with the project's virtual environment)::

    .venv/bin/python scripts/update_translations.py          # update .ts, fill, build .qm
    .venv/bin/python scripts/update_translations.py --check  # exit 1 when anything is stale

The default run:

1. ``pyside6-lupdate`` reads every module of ``glmdesk/`` that imports PySide6 and
   calls ``tr``/``translate`` (or defines its own ``QT_TRANSLATE_NOOP`` marker) and updates ``resources/translations/glmdesk_<lang>.ts``
   (``-no-obsolete``: strings gone from the code are dropped; no source locations, so
   the file changes only when strings do);
2. the translations in ``resources/translations/<lang>_terms.toml`` (English source
   text = translation, optionally per context) are written into the ``.ts`` with
   ElementTree; entries the terms file does not name keep what the ``.ts`` has (an
   edit made in Qt Linguist survives) and are listed when still unfinished;
3. ``pyside6-lrelease`` compiles the ``.ts`` into ``glmdesk_<lang>.qm`` (which ships).

``--check`` changes nothing. It fails when a ``.ts`` has unfinished or obsolete
entries, when lupdate over the current sources would add or drop a string, when a
translation loses or gains a placeholder (``{name}``, ``%1``, ``%n``) or a keyboard
accelerator, or when the ``.qm`` is not what lrelease makes of the ``.ts``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "glmdesk"
TRANSLATIONS = ROOT / "resources" / "translations"
#: Languages with a translation, as in ``glmdesk.ui.common.i18n.LANGUAGES`` (English is the source).
LANGUAGES = ("zh_CN",)

_TR_CALL = re.compile(r"\b(?:tr|translate|QT_TR_NOOP|QT_TRANSLATE_NOOP)\s*\(")
_OWN_MARKER = re.compile(
    r"^(?:def QT_TRANSLATE_NOOP\(|from [\w.]+ import \(?[\w\s,]*\bQT_TRANSLATE_NOOP\b)", re.MULTILINE
)
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}|\{\}|%(?:n|L?\d+)")
# "&Open" but not "&&", "&nbsp;" or "&#9632;".
_ACCELERATOR = re.compile(r"&(?!&|#\d+;|[A-Za-z]+;)\S")


@dataclass(frozen=True)
class Entry:
    """One message of a ``.ts`` file."""

    context: str
    source: str
    comment: str
    translation: str
    kind: str  # "" (finished), "unfinished", "obsolete" or "vanished"
    numerus: bool

    @property
    def key(self) -> tuple[str, str, str]:
        """``(context, source, comment)``: what identifies the message to lupdate."""
        return (self.context, self.source, self.comment)


def ts_path(language: str) -> Path:
    """The ``.ts`` file of ``language``."""
    return TRANSLATIONS / f"glmdesk_{language}.ts"


def qm_path(language: str) -> Path:
    """The compiled ``.qm`` file of ``language``."""
    return TRANSLATIONS / f"glmdesk_{language}.qm"


def terms_path(language: str) -> Path:
    """The hand-written translations of ``language``."""
    return TRANSLATIONS / f"{language}_terms.toml"


def source_files() -> list[Path]:
    """Every module of glmdesk with translatable strings: those that import PySide6 and call
    tr/translate, and plain modules that define or import a ``QT_TRANSLATE_NOOP`` marker
    (``glmdesk/core/sampling_fields.py``: strings the sidebar translates; the backends'
    specs: their options and notes, which Open model translates)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if ("PySide6" in text and _TR_CALL.search(text)) or _OWN_MARKER.search(text):
            found.append(path)
    return found


def tool(name: str) -> str:
    """Path of a PySide6 tool (``pyside6-lupdate``): next to this Python first, then on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} was not found; install PySide6 (PySide6-Essentials) in this environment.")
    return found


def run_lupdate(ts: Path, language: str) -> None:
    """Update ``ts`` from the current sources (created when missing)."""
    sources = [str(p.relative_to(ROOT)) for p in source_files()]
    command = [
        tool("pyside6-lupdate"),
        *sources,
        "-ts",
        str(ts),
        "-no-obsolete",
        "-locations",
        "none",
        "-source-language",
        "en",
        "-target-language",
        language,
        "-silent",
    ]
    subprocess.run(command, cwd=ROOT, check=True)


def run_lrelease(ts: Path, qm: Path) -> None:
    """Compile ``ts`` into ``qm``."""
    subprocess.run([tool("pyside6-lrelease"), str(ts), "-qm", str(qm), "-silent"], cwd=ROOT, check=True)


def read_ts(ts: Path) -> list[Entry]:
    """The messages of a ``.ts`` file, in file order."""
    entries = []
    for context in ET.parse(ts).getroot().iter("context"):
        name = context.findtext("name", "")
        for message in context.iter("message"):
            translation = message.find("translation")
            numerus = message.get("numerus") == "yes"
            if translation is None:
                text, kind = "", "unfinished"
            else:
                kind = translation.get("type", "")
                if numerus:
                    forms = [f.text or "" for f in translation.iter("numerusform")]
                    text = forms[0] if forms and all(forms) else ""
                else:
                    text = translation.text or ""
            entries.append(
                Entry(
                    context=name,
                    source=message.findtext("source", ""),
                    comment=message.findtext("comment", ""),
                    translation=text,
                    kind=kind,
                    numerus=numerus,
                )
            )
    return entries


def load_terms(language: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """``(terms, per-context terms)`` from ``<lang>_terms.toml`` (empty when there is none)."""
    path = terms_path(language)
    if not path.exists():
        return {}, {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return dict(data.get("terms", {})), {k: dict(v) for k, v in data.get("context", {}).items()}


def unused_terms(language: str) -> list[str]:
    """Terms file entries that match no string of the ``.ts`` (renamed or removed in the code)."""
    terms, by_context = load_terms(language)
    entries = read_ts(ts_path(language))
    sources = {e.source for e in entries}
    unused = [s for s in terms if s not in sources]
    for context, texts in by_context.items():
        present = {e.source for e in entries if e.context == context}
        unused += [f"[{context}] {s}" for s in texts if s not in present]
    return unused


def fill(ts: Path, language: str) -> list[Entry]:
    """Write the terms file's translations into ``ts``; return the entries still unfinished."""
    terms, by_context = load_terms(language)
    tree = ET.parse(ts)
    for context in tree.getroot().iter("context"):
        name = context.findtext("name", "")
        for message in context.iter("message"):
            source = message.findtext("source", "")
            text = by_context.get(name, {}).get(source, terms.get(source))
            if text is None:
                continue
            translation = message.find("translation")
            if translation is None:
                translation = ET.SubElement(message, "translation")
            translation.attrib.pop("type", None)
            if message.get("numerus") == "yes":
                for form in list(translation):
                    translation.remove(form)
                translation.text = None
                ET.SubElement(translation, "numerusform").text = text  # Chinese has one form
            else:
                translation.text = text
    ET.indent(tree, space="    ")
    body = ET.tostring(tree.getroot(), encoding="unicode")
    ts.write_text(f'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE TS>\n{body}\n', encoding="utf-8")
    return [e for e in read_ts(ts) if e.kind or not e.translation]


def _marks(text: str) -> list[str]:
    return sorted(_PLACEHOLDER.findall(text))


def problems(language: str) -> list[str]:
    """Everything ``--check`` reports for ``language``, one sentence each (empty: all good)."""
    ts, qm = ts_path(language), qm_path(language)
    if not ts.exists():
        return [f"{ts.relative_to(ROOT)} is missing: run scripts/update_translations.py"]
    found = []
    entries = read_ts(ts)
    for e in entries:
        where = f"{e.context}: {e.source!r}"
        if e.kind in ("obsolete", "vanished"):
            found.append(f"obsolete entry {where}")
        elif e.kind == "unfinished" or not e.translation:
            found.append(f"unfinished entry {where}")
        elif _marks(e.source) != _marks(e.translation):
            found.append(f"placeholders differ in {where}: {e.translation!r}")
        elif bool(_ACCELERATOR.search(e.source)) != bool(_ACCELERATOR.search(e.translation)):
            found.append(f"keyboard accelerator (&) missing or added in {where}: {e.translation!r}")
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / ts.name
        shutil.copyfile(ts, fresh)
        run_lupdate(fresh, language)
        now = {e.key for e in read_ts(fresh) if e.kind not in ("obsolete", "vanished")}
        before = {e.key for e in entries}
        for context, source, _ in sorted(now - before):
            found.append(f"new string not in the .ts yet {context}: {source!r}")
        for context, source, _ in sorted(before - now):
            found.append(f"string no longer in the code {context}: {source!r}")
        built = Path(tmp) / qm.name
        run_lrelease(ts, built)
        if not qm.exists() or qm.read_bytes() != built.read_bytes():
            found.append(f"{qm.relative_to(ROOT)} is out of date: run scripts/update_translations.py")
    return found


def update(language: str) -> list[Entry]:
    """Update, fill and compile ``language``; return the entries left unfinished."""
    ts = ts_path(language)
    TRANSLATIONS.mkdir(parents=True, exist_ok=True)
    run_lupdate(ts, language)
    fill(ts, language)
    run_lupdate(ts, language)  # back to lupdate's own layout, so that the next run is a no-op
    run_lrelease(ts, qm_path(language))
    return [e for e in read_ts(ts) if e.kind or not e.translation]


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when anything is stale")
    parser.add_argument("languages", nargs="*", default=list(LANGUAGES), help="default: all")
    args = parser.parse_args(argv)
    status = 0
    for language in args.languages:
        if args.check:
            for problem in problems(language):
                print(f"{language}: {problem}")
                status = 1
            continue
        left = update(language)
        total = len(read_ts(ts_path(language)))
        print(f"{language}: {total - len(left)} of {total} strings translated -> {qm_path(language).name}")
        for e in left:
            print(f"  untranslated {e.context}: {e.source!r}")
            status = 1
        unused = unused_terms(language)
        if unused:
            print(f"  {len(unused)} entries of {terms_path(language).name} match no string (kept):")
            for text in unused:
                print(f"    {text!r}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
