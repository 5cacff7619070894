"""The sampling table: one row per SamplingParams field, and the one mapping to and from
OpenAI / vLLM requests (issue 26 §3)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from glmdesk.core.sampling_fields import (
    SAMPLING_TABLE,
    SWITCHES,
    RequestFieldError,
    SamplingField,
    field_names,
    live_fields,
    params_from_request,
    request_fields,
)
from glmdesk.core.settings import SamplingParams


def test_one_row_per_field_in_order_with_its_type():
    fields = [f for f in dataclasses.fields(SamplingParams) if f.name not in SWITCHES]
    assert [f.name for f in dataclasses.fields(SamplingParams) if f.name in SWITCHES] == list(SWITCHES)
    assert field_names() == tuple(f.name for f in fields)
    for row, f in zip(SAMPLING_TABLE, fields, strict=True):
        assert f.type.split(" |")[0] == row.type.__name__, row.name
        row.check(f.default)  # every default is valid by its own row
    assert live_fields() == frozenset(field_names()) - {"seed"}  # the seed is read once per answer


def test_request_mapping_goes_both_ways():
    params = SamplingParams(
        temperature=0.3, top_p=0.5, top_k=40, min_p=0.1, repetition_penalty=1.3, max_new_tokens=77, seed=9
    )
    fields, extra = request_fields(params)
    assert fields == {"temperature": 0.3, "top_p": 0.5, "max_tokens": 77, "seed": 9}
    assert extra == {"top_k": 40, "min_p": 0.1, "repetition_penalty": 1.3}  # vLLM's extra fields
    assert params_from_request(fields | extra, SamplingParams()) == params
    # Off values are not sent as extras (a server without them would refuse them), nor a missing seed.
    assert request_fields(SamplingParams()) == ({"temperature": 0.7, "top_p": 0.9, "max_tokens": 512}, {})


def test_request_names_aliases_and_off_values():
    base = SamplingParams(top_k=5)
    assert params_from_request({"top_k": -1}, base).top_k == 0  # vLLM's "off"
    assert params_from_request({"max_tokens": 10, "max_completion_tokens": 20}, base).max_new_tokens == 20
    assert params_from_request({"max_tokens": 10, "max_completion_tokens": None}, base).max_new_tokens == 10
    assert params_from_request({"temperature": None}, base) == base
    with pytest.raises(RequestFieldError, match="Max new tokens must be 1 or more") as exc:
        params_from_request({"max_completion_tokens": 0}, base)
    assert exc.value.param == "max_tokens"
    with pytest.raises(RequestFieldError, match="at least 1.0") as exc:
        params_from_request({"temperature": 0.5, "repetition_penalty": 0.5}, base)
    assert exc.value.param == "repetition_penalty"


def test_rows_that_cannot_be_shown_are_refused():
    with pytest.raises(ValueError, match="entry"):
        SamplingField("typical_p", float, 0.0, 1.0, "between 0 and 1", "Typical-p", "help", control="entry")
    with pytest.raises(ValueError, match="control_range"):
        SamplingField("n_keep", int, 0, None, "0 or more", "Keep", "help")
    with pytest.raises(ValueError, match="control"):
        SamplingField("typical_p", float, 0.0, 1.0, "between 0 and 1", "Typical-p", "help", control="dial")
    keep = SamplingField("n_keep", int, 0, None, "0 or more", "Keep", "help", control_range=(0, 9))
    assert keep.option == "--n-keep" and keep.bounds == (0, 9)


def test_template_kwargs_are_name_value_pairs_of_json_scalars():
    from glmdesk.core.settings import SamplingParams

    stored = SamplingParams(template_kwargs=[["clear_thinking", False]])  # as JSON gives it back
    assert stored.template_kwargs == (("clear_thinking", False),) and hash(stored)
    for bad, words in (
        ([["x", [1]]], "must be text, a number, true, false or null"),
        ([["enable_thinking", True]], "enable_thinking is its own field"),
        ([5], "holds (name, value) pairs"),
    ):
        with pytest.raises(ValueError, match=re.escape(words)):
            SamplingParams(template_kwargs=bad)
