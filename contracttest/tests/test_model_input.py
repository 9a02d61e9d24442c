"""The checks every harness's end-to-end test makes on what its model was sent."""

from __future__ import annotations

import pytest

from paxm_contracttest.model_input import PASSIVE_CLOSE, PASSIVE_OPEN, assert_no_hook_noise, recalled

ENVELOPE = f"{PASSIVE_OPEN}\n- KESTREL-1 decided\n{PASSIVE_CLOSE}"


def test_a_whole_envelope_with_its_marker_is_a_recall() -> None:
    text = f"hello\n{ENVELOPE}\nwhat did we decide?"
    assert_no_hook_noise(text)
    assert recalled(text, "KESTREL-1")
    assert not recalled(text, "KESTREL-2")


def test_a_marker_outside_the_envelope_is_not_a_recall() -> None:
    assert not recalled(f"KESTREL-1 {PASSIVE_OPEN} nothing {PASSIVE_CLOSE}", "KESTREL-1")
    assert not recalled("KESTREL-1 with no envelope at all", "KESTREL-1")


def test_an_envelope_that_is_never_closed_is_no_recall_and_is_noise() -> None:
    text = f"{PASSIVE_OPEN} KESTREL-1"
    assert not recalled(text, "KESTREL-1")
    with pytest.raises(AssertionError):
        assert_no_hook_noise(text)


@pytest.mark.parametrize(
    "noise", ["Traceback (most recent call last)", "paxm hook: daemon", "PAXM-HOOK 1 0", "timed out"]
)
def test_hook_plumbing_reaching_the_model_fails(noise: str) -> None:
    with pytest.raises(AssertionError, match="reached the model"):
        assert_no_hook_noise(f"{ENVELOPE}\n{noise}")


def test_a_harness_adds_its_own_error_strings() -> None:
    assert_no_hook_noise("Error: spawn ENOENT")
    with pytest.raises(AssertionError, match="Error: spawn"):
        assert_no_hook_noise("Error: spawn ENOENT", extra=("Error: spawn",))


def test_escaped_tags_are_checked_in_the_harness_spelling() -> None:
    opening, closing = "&lt;paxm-recall version=&quot;1&quot;&gt;", "&lt;/paxm-recall&gt;"
    text = f"{opening} KESTREL-1 {closing}"
    assert recalled(text, "KESTREL-1", open_tag=opening, close_tag=closing)
    assert not recalled(text, "KESTREL-1")  # the raw tags are not there
    assert_no_hook_noise(text, open_tag="&lt;paxm-recall", close_tag=closing)
    with pytest.raises(AssertionError):
        assert_no_hook_noise(f"{opening} unclosed", open_tag="&lt;paxm-recall", close_tag=closing)
