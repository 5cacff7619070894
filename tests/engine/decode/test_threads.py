"""The CPU thread policy: counts chosen from measured steps, within bounds; the setting overrides.

The tuner is driven with step times given per thread count (its clock and
``torch.set_num_threads`` are parameters), so the tests check its decisions, not
this machine's timings; the last tests run it on the real model.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.acceleration import DEFAULT_THREADS
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode.generate import stream_chat
from glmdesk.engine.decode.threads import ThreadTuner

QUIET = {1: 0.060, 2: 0.040, 3: 0.034, 4: 0.031}
ONE_BUSY = {1: 0.070, 2: 0.250, 3: 0.300, 4: 0.320}


class Machine:
    """Step times per thread count, a clock that advances by them, the count applied."""

    def __init__(self, costs: dict[int, float]) -> None:
        self.costs = costs
        self.now = 0.0
        self.count = max(costs)

    def tuner(self, **kw) -> ThreadTuner:
        kw.setdefault("max_threads", max(self.costs))
        return ThreadTuner(clock=lambda: self.now, set_threads=self.set, get_threads=lambda: self.count, **kw)

    def set(self, count: int) -> None:
        assert count in self.costs, f"count {count} outside the bounds"
        self.count = count

    def run(self, tuner: ThreadTuner, steps: int) -> list[int]:
        """Counts used by each of ``steps`` decode steps."""
        used = []
        for _ in range(steps):
            tuner.apply()
            used.append(self.count)
            self.now += self.costs[self.count]
            tuner.record(self.costs[self.count])
        return used


@pytest.mark.parametrize("cores", [2, 4])
def test_an_idle_machine_keeps_every_core(cores):
    machine = Machine({c: QUIET[c] for c in range(1, cores + 1)})
    tuner = machine.tuner()
    used = machine.run(tuner, 1000)
    assert tuner.threads == cores and tuner.history == []
    assert used.count(cores) / len(used) > 0.97  # probing costs few steps


@pytest.mark.parametrize("cores", [2, 4])
def test_a_busy_core_moves_to_fewer_threads_and_stays(cores):
    machine = Machine({c: ONE_BUSY[c] for c in range(1, cores + 1)})
    tuner = machine.tuner()
    used = machine.run(tuner, 600)
    assert tuner.threads == 1
    assert tuner.history[0][0] <= 30  # the first probe moves down at once
    assert used[200:].count(1) / len(used[200:]) > 0.95


def test_the_count_follows_the_load_both_ways():
    machine = Machine({1: QUIET[1], 2: QUIET[2]})
    tuner = machine.tuner()
    machine.run(tuner, 100)
    machine.costs = {1: ONE_BUSY[1], 2: ONE_BUSY[2]}
    machine.run(tuner, 300)
    assert tuner.threads == 1
    machine.costs = {1: QUIET[1], 2: QUIET[2]}
    machine.now += 60.0  # an idle minute between answers: the next answer probes at once
    used = machine.run(tuner, 30)
    assert tuner.threads == 2 and used[10:].count(2) >= 15


def test_bounds_hold_and_bad_bounds_are_refused():
    machine = Machine({2: 0.05, 3: 0.04})
    tuner = machine.tuner(min_threads=2, max_threads=3, start=2)
    used = machine.run(tuner, 300)
    assert set(used) <= {2, 3} and tuner.threads == 3
    with pytest.raises(ValueError):
        ThreadTuner(max_threads=2, min_threads=3)


def test_the_default_adapts_and_the_setting_overrides(embedded):
    messages = [ChatMessage("user", "Count from one to ten.")]
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=24))
    tuner = embedded.tuner  # loaded with threads=0 (automatic)
    assert tuner is not None and tuner.max_threads == DEFAULT_THREADS
    before = tuner._steps
    chunks = list(stream_chat(embedded, messages, box))
    n = chunks[-1].n_generated  # every decode step timed (the last token is stepped before a stop id)
    assert tuner._steps - before == (n if chunks[-1].finish_reason == "stop" else n - 1)
    assert 1 <= tuner.threads <= DEFAULT_THREADS
    # The count a step chose applies from the next step (an answer may end on a probe's turn).
    tuner.apply()
    assert torch.get_num_threads() == (tuner._trying if tuner._trying is not None else tuner.threads)
    try:
        fixed = load_model(LoadSettings(threads=1))
        assert fixed.tuner is None
        list(stream_chat(fixed, messages, box))
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(DEFAULT_THREADS)


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_waiting_openmp_threads_sleep_unless_the_user_says_otherwise(given, expected):
    """glmdesk sets OMP_WAIT_POLICY before torch or llama.cpp load OpenMP; a user's value stays."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    code = "import glmdesk, os, sys; print(os.environ['OMP_WAIT_POLICY'], 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [expected, "False"]  # set before torch is loaded
