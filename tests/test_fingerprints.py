"""Issue 23: behaviour is unchanged while the house is rebuilt. Every view, note, summarizer
prompt and demo event of the benchmark runs is fingerprinted (``tests/fingerprints.py``);
a change that moves one must say why, and regenerate them with
``python -m tests.fingerprints``."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.fingerprints import (
    FINGERPRINTS,
    contender_fingerprints,
    demo_fingerprint,
    recorded_fingerprints,
)
from tests.helpers import NO_TRANSCRIPTS_REASON

GROUPS: dict[str, Callable[[], dict[str, str]]] = {
    "contenders": contender_fingerprints,
    "recorded": recorded_fingerprints,
    "demo": demo_fingerprint,
}


@pytest.mark.slow
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_every_view_of_the_benchmark_runs_is_as_fingerprinted(group: str) -> None:
    got = GROUPS[group]()
    if not got:
        pytest.skip(NO_TRANSCRIPTS_REASON)
    expected = {
        k: v for k, v in json.loads(FINGERPRINTS.read_text()).items() if k.split("/")[0] == group
    }
    changed = sorted(k for k in expected if got.get(k) != expected[k])
    assert not changed, (
        f"the views of {changed} changed: if that is intended, say why in the commit and run "
        "`python -m tests.fingerprints`"
    )
    assert set(got) == set(expected)
