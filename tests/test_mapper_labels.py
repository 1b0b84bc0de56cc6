"""Issue 28: the tool-call mapper against 344 hand-labelled calls of the 14 recorded runs."""

from __future__ import annotations

import pytest

from tests.labels import LABELS, TRANSCRIPTS, Score, score

pytestmark = [
    pytest.mark.skipif(
        not TRANSCRIPTS.is_dir(),
        reason=f"the recorded runs are not beside the repo ({TRANSCRIPTS})",
    ),
    pytest.mark.slow,  # ~20 s: every labelled call of the 14 recorded runs
]


@pytest.fixture(scope="module")
def scores() -> dict[str, Score]:
    """The mapper's score against the labels, per harness and ``"all"``: computed once."""
    return score()


def test_the_sample_covers_every_harness_and_at_least_300_calls(scores: dict[str, Score]) -> None:
    assert scores["all"].calls == len(LABELS.read_text().splitlines()) >= 300
    assert {"Claude Code", "Codex", "OpenHands", "SWE-agent", "mini-swe-agent"} <= set(scores)


def test_no_wrong_path_and_nine_in_ten_effects_seen(scores: dict[str, Score]) -> None:
    overall = scores["all"]
    assert overall.precision >= 0.98, overall.wrong
    assert overall.recall >= 0.90, overall.wrong


@pytest.mark.parametrize(
    ("harness", "floor"),
    [
        ("Claude Code", 0.80),
        ("mini-swe-agent", 0.80),
        ("OpenHands", 0.80),
        ("SWE-agent", 0.80),
        # One Codex call reads ten files through a `for` loop over a glob whose output was
        # cut: the glob takes the paths an earlier `wc -l` of the run listed.
        ("Codex", 0.80),
    ],
)
def test_each_harness(harness: str, floor: float, scores: dict[str, Score]) -> None:
    s = scores[harness]
    assert s.precision >= 0.98
    assert s.recall >= floor
