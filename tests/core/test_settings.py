"""Settings refuse impossible values with a sentence (issue 7 cases 1-3)."""

from __future__ import annotations

import math
import threading

import pytest

from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams


def test_defaults_are_valid():
    SamplingParams()
    CacheSettings()
    LoadSettings()


def test_temperature_zero_is_greedy_not_an_error():
    assert SamplingParams(temperature=0.0).greedy


@pytest.mark.parametrize("value", [0.5, 0.99, 0.0, -1.0])
def test_repetition_penalty_below_one_is_refused_with_the_reason(value):
    with pytest.raises(ValueError, match="at least 1.0"):
        SamplingParams(repetition_penalty=value)


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("temperature", -0.1, "between 0 and 2"),
        ("temperature", math.nan, "finite"),
        ("top_p", 1.5, "between 0 and 1"),
        ("top_k", -1, "Top-k"),
        ("top_k", 1.5, "whole number"),
        ("min_p", 2.0, "Min-p"),
        ("max_new_tokens", 0, "1 or more"),
        ("seed", -5, "Seed"),
    ],
)
def test_out_of_range_values_say_why(field, value, words):
    with pytest.raises(ValueError, match=words):
        SamplingParams(**{field: value})


def test_top_p_zero_is_allowed():
    assert SamplingParams(top_p=0.0).top_p == 0.0


def test_cache_settings_validate():
    with pytest.raises(ValueError, match="strategy"):
        CacheSettings(strategy="magic")
    with pytest.raises(ValueError, match="fewer than the window"):
        CacheSettings(window=32, sinks=32)
    with pytest.raises(ValueError, match="MiB"):
        CacheSettings(budget_mib=0)


def test_load_settings_validate():
    with pytest.raises(ValueError, match="device"):
        LoadSettings(device="tpu")
    with pytest.raises(ValueError, match="CPU threads"):
        LoadSettings(threads=-1)


def test_params_box_swaps_whole_values_across_threads():
    box = ParamsBox(SamplingParams(temperature=0.1))
    seen = []

    def reader():
        for _ in range(1000):
            p = box.get()
            seen.append((p.temperature, p.top_p))

    thread = threading.Thread(target=reader)
    thread.start()
    for i in range(200):
        box.set(SamplingParams(temperature=0.5, top_p=0.5) if i % 2 else SamplingParams(temperature=0.1))
    thread.join()
    assert set(seen) <= {(0.1, 0.9), (0.5, 0.5)}  # never a half-swapped mix
    with pytest.raises(TypeError):
        box.set({"temperature": 1.0})


def test_enable_thinking_is_true_false_or_unset():
    assert SamplingParams().enable_thinking is None
    assert SamplingParams(enable_thinking=False).enable_thinking is False
    with pytest.raises(ValueError, match="enable_thinking must be true, false or unset"):
        SamplingParams(enable_thinking=1)
