"""Settings refuse impossible values with a sentence (issue 7 cases 1-3)."""

from __future__ import annotations

import dataclasses
import math
import threading

import pytest

from glmdesk.core.settings import (
    CacheSettings,
    LlamaCppOptions,
    LoadSettings,
    ParamsBox,
    RemoteOptions,
    SamplingParams,
    TransformersOptions,
)


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
    with pytest.raises(ValueError, match="quantization"):
        LoadSettings(quantization="3bit")


def test_each_engines_options_are_its_own_group_and_the_flat_names_still_work():
    flat = LoadSettings("m", "int4-wo", device="cpu", threads=2, n_ctx=4096, remote_model="glm-4")
    grouped = LoadSettings(
        "m",
        device="cpu",
        threads=2,
        transformers=TransformersOptions(quantization="int4-wo"),
        llamacpp=LlamaCppOptions(n_ctx=4096),
        remote=RemoteOptions(model="glm-4"),
    )
    assert flat == grouped and hash(flat) == hash(grouped)
    assert (flat.quantization, flat.n_ctx, flat.remote_model) == ("int4-wo", 4096, "glm-4")
    changed = dataclasses.replace(flat, engine="llamacpp", n_batch=64)  # a flat field beside its group
    assert (changed.engine, changed.llamacpp, changed.quantization) == (
        "llamacpp",
        LlamaCppOptions(n_ctx=4096, n_batch=64),
        "int4-wo",
    )
    secret = LoadSettings(remote_url="http://gpu-box:8000/v1", remote_api_key="sk-secret")
    assert secret.remote.api_key == "sk-secret" and "sk-secret" not in repr(secret)
    with pytest.raises(ValueError, match="256 to 2097152"):
        dataclasses.replace(flat, n_ctx=5)
    with pytest.raises(TypeError, match="n_context"):
        LoadSettings(n_context=4096)


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
