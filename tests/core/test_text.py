"""held_length: what a streamed text holds back because it could begin a marker."""

from glmdesk.core.text import held_length


def test_an_end_that_could_begin_a_marker_is_held():
    assert held_length("answer </th", ("</think>",)) == 4
    assert held_length("answer <", ("</think>", "<tool_call>")) == 1


def test_the_longest_possible_start_among_markers_is_held():
    assert held_length("x ST", ("STOP", "T")) == 2  # "ST" could begin STOP; "T" alone is shorter


def test_nothing_is_held_when_no_end_begins_a_marker():
    assert held_length("plain text", ("</think>",)) == 0
    assert held_length("", ("</think>",)) == 0
    assert held_length("anything", ()) == 0


def test_a_whole_marker_is_not_held_as_a_start():
    # A marker must be found whole by the caller; only its proper starts are held.
    assert held_length("[Round", ("[Round",)) == 0
