"""The smoke test of a llama.cpp build, in a child process, on fake builds (a ``llama_cpp``
package that answers, answers wrongly, or kills itself with SIGSEGV on the prompt batch;
tests/helpers/fake_llamacpp.py), and what ``auto`` makes of an installed build that
crashed: the terminal says so in one line and answers on transformers."""

from __future__ import annotations

import json

import pytest

from glmdesk import cli
from glmdesk.core.settings import LoadSettings
from glmdesk.engine import llamacpp_smoke
from glmdesk.engine.backends import engine_choice
from glmdesk.engine.backends import llamacpp as llamacpp_spec
from glmdesk.engine.llamacpp_smoke import EXPECTED, PROMPT, build_key, remembered, run_smoke, verdict_for
from tests.helpers.fake_llamacpp import fake_build, install_on_path


@pytest.fixture(autouse=True)
def own_verdicts(tmp_path, monkeypatch):
    """This test's own verdict file (the run's shared one holds the real build's)."""
    path = tmp_path / "verdicts.json"
    monkeypatch.setenv("GLMDESK_LLAMACPP_VERDICTS", str(path))
    return path


def test_each_outcome_is_found_in_a_child_and_remembered(tmp_path, own_verdicts) -> None:
    assert len(PROMPT.split()) >= 64 and EXPECTED in PROMPT
    passed = run_smoke(fake_build(tmp_path / "good", "answer"), name="native")
    assert (passed.outcome, passed.answer, passed.build) == (
        "passed",
        "Paris.",
        "llama-cpp-python 0.3.36, native build",
    )
    crashed = run_smoke(fake_build(tmp_path / "amx", "crash"))
    assert (crashed.outcome, crashed.signal) == ("crashed", "SIGSEGV")
    wrong = run_smoke(fake_build(tmp_path / "bad", "wrong"))
    assert (wrong.outcome, wrong.answer) == ("wrong_answer", "London.")
    broken = tmp_path / "broken"
    fake_build(broken, "answer", built_as="broken")
    (broken / "llama_cpp" / "__init__.py").write_text("raise ImportError('libllama.so: cannot open')\n")
    failed = run_smoke(broken)
    assert failed.outcome == "failed" and "cannot open" in failed.answer

    stored = json.loads(own_verdicts.read_text())
    # A child that could not run the test (a missing module) says nothing of the build:
    # not kept, so the build is tested again once the environment is mended.
    assert {entry["outcome"] for entry in stored.values()} == {"passed", "crashed", "wrong_answer"}
    assert remembered(failed.key) is None
    assert crashed.key == build_key(tmp_path / "amx")[1] and crashed.key.startswith("0.3.36:")


def test_a_remembered_verdict_is_not_run_again(tmp_path) -> None:
    root = fake_build(tmp_path / "b", "crash")
    first = verdict_for(root)
    assert first.outcome == "crashed"
    # The same libraries (same key) with an engine that would now answer: not run again.
    (root / "llama_cpp" / "__init__.py").write_text("raise SystemExit('must not run')\n")
    assert verdict_for(root) == first
    # Other libraries are another build: run.
    (root / "llama_cpp" / "lib" / "libllama.so").write_bytes(b"rebuilt")
    assert verdict_for(root).outcome == "failed"


@pytest.fixture
def installed_crashing(tmp_path, monkeypatch):
    """A llama.cpp build that crashes on a prompt batch, installed (first on the path of
    this process and of its children)."""
    return install_on_path(fake_build(tmp_path / "site", "crash"), monkeypatch)


def test_an_installed_build_that_crashes_is_passed_over(installed_crashing) -> None:
    assert llamacpp_smoke.installed_root() == installed_crashing
    assert engine_choice(LoadSettings()).engine == "llamacpp"  # not tested yet: cheap checks trust it
    problem = llamacpp_spec.SPEC.vet()
    assert problem.kind == "llamacpp_untrusted" and problem.params["signal"] == "SIGSEGV"
    choice = engine_choice(LoadSettings())
    assert (choice.engine, choice.passed_over, choice.reason) == (
        "transformers",
        "llamacpp",
        "llamacpp_untrusted",
    )
    availability = llamacpp_spec.llamacpp_availability()
    assert availability["engine:llamacpp"].params["reason"] == "llamacpp_untrusted"


def test_the_terminal_says_so_in_one_line_and_answers_on_transformers(
    embedded_folder, installed_crashing, capsys
) -> None:
    prompt = ["--prompt", "What is the capital of Japan?", "--temperature", "0", "--max-new-tokens", "12"]
    assert cli.main(["chat", "--device", "cpu", *prompt]) == 0
    out, err = capsys.readouterr()
    assert "Tokyo" in out
    assert ", int4-wo" in err and "transformers)" in err
    said = [line for line in err.splitlines() if "llama.cpp" in line]
    assert said == [
        "note: llama.cpp (llama-cpp-python 0.3.36) crashed (SIGSEGV), so it is not used: transformers "
        "answers instead. Keep transformers, or rebuild llama.cpp with: glmdesk build-llamacpp"
    ]


def test_build_llamacpp_tests_the_installed_build_and_replaces_one_that_crashed(
    installed_crashing, monkeypatch, tmp_path
) -> None:
    """``glmdesk build-llamacpp`` does not call a crashing build "installed already": it
    says why and runs the candidates (the builder's own test runs them on fake builds)."""
    from glmdesk.engine import llamacpp_build
    from glmdesk.engine.llamacpp_smoke import Verdict
    from tests.helpers.cli import run_cli

    def candidates(report, cancel, verdicts):
        verdicts += [
            Verdict("crashed", "llama-cpp-python 0.3.36, native build", "k1", signal="SIGSEGV"),
            Verdict("passed", "llama-cpp-python 0.3.36, noamx build", "k2", answer="Paris."),
        ]
        return tmp_path / "wheels" / "noamx" / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"

    monkeypatch.setattr(llamacpp_build, "ensure_llamacpp", candidates)
    done = run_cli("build-llamacpp")
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        "llama.cpp (llama-cpp-python 0.3.36) crashed (SIGSEGV): building one that answers.",
        "not used: llama.cpp (llama-cpp-python 0.3.36, native build) crashed (SIGSEGV)",
        f"llama.cpp is installed (llama-cpp-python 0.3.36, noamx build; wheel kept in {tmp_path / 'wheels' / 'noamx'}).",
    ]
