"""The sidebar's "Reasoning effort": the loaded model's levels, read from its chat template
(GLM-5.2: high, max), reach the template as ``reasoning_effort`` from the next answer; a
model without levels greys the choice and says why."""

from __future__ import annotations

from glmdesk.core.settings import LoadSettings, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from tests.helpers.glm5_models import GLM52_TEMPLATE, write_glm5

MS = 60_000


def test_a_glm5_2_offers_its_levels_and_the_chosen_one_reaches_the_prompt(qtbot, make_window, tmp_path):
    model = load_model(
        LoadSettings(model=str(write_glm5(tmp_path / "GLM-5.2", template=GLM52_TEMPLATE)), device="cpu")
    )
    prompts: list[str] = []
    encode = model.prompt_format.encode
    model.prompt_format.encode = lambda messages, *a, **k: (
        prompts.append(model.tokenizer.decode(encode(messages, *a, **k))) or encode(messages, *a, **k)
    )
    window = make_window(model)
    effort = window.sidebar.effort
    assert effort.box.isEnabled() and [effort.box.itemText(i) for i in range(effort.box.count())] == [
        "Model default",
        "high",
        "max",
    ]
    effort.box.setCurrentIndex(1)  # as the user picks "high"
    assert dict(window.params_box.get().template_kwargs)["reasoning_effort"] == "high"
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=4))
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        assert window.send_message("Hello")
    assert "effort=high" in prompts[-1]
    effort.box.setCurrentIndex(0)  # back to the model's default: the template's own ("max")
    assert "reasoning_effort" not in dict(window.params_box.get().template_kwargs)


def test_a_model_without_levels_greys_the_choice_with_the_reason(qtbot, make_window, shared_model):
    window = make_window(shared_model)
    effort = window.sidebar.effort
    assert not effort.box.isEnabled() and effort.value() is None
    assert "has no reasoning effort levels" in effort.box.toolTip()
    assert effort.reason.isVisibleTo(window) and "GLM-5.2" in effort.reason.text()


def test_a_greyed_boxs_reason_takes_one_line_and_its_tooltip_says_it_whole(qtbot) -> None:
    """At 1024x700 in Chinese the three thinking captions wrapped into each other; a reason
    is now one line, cut with an ellipsis, whole in its tooltip."""
    from glmdesk.ui.sidebar.effort_choice import EffortChoice

    reason = "SmolLM2-135M-Instruct has no reasoning effort levels (GLM-5.2 and 5.3 have them). " * 2
    choice = EffortChoice()
    qtbot.addWidget(choice)
    choice.resize(220, 80)
    choice.set_levels((), reason)
    choice.show()
    qtbot.waitExposed(choice)
    line = choice.reason
    assert line.text() == reason and line.toolTip() == reason and not line.isHidden()
    assert line.height() < 2 * line.fontMetrics().lineSpacing()
    assert line.fontMetrics().horizontalAdvance(reason) > line.width()  # it is cut, not wrapped
