"""Short-term working memory (the per-turn brief) and its consolidation into a long-term
code map, including the write-side merge a keyed store applies.

Ports seed `working/working.test.ts` by name (with the 2026.10.27 `minFiles` changes).
"""

from __future__ import annotations

import doctest
import json
import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_builderforce_memory.working import (
    CONSOLIDATED_KEY_PREFIX,
    MAX_CONSOLIDATED_FILES,
    ConsolidatedMemory,
    MapEntry,
    Observation,
    WorkingMemory,
    WorkingMemorySnapshot,
    consolidate,
    consolidated_key,
    map_entries,
    merge_consolidated,
    rank_by_count,
    repo_path,
)
from langchain_builderforce_memory.working import consolidation as consolidate_module
from langchain_builderforce_memory.working import memory as memory_module

AT = datetime(2026, 10, 24, 12, 0, tzinfo=timezone.utc)


def snap(**partial: object) -> WorkingMemorySnapshot:
    base: dict[str, object] = {
        "created": [],
        "edited": [],
        "deleted": [],
        "read": [],
        "searched": [],
    }
    base.update(partial)
    return base  # type: ignore[return-value]


def entries(content: str) -> list[str]:
    return [line for line in content.split("\n") if line.startswith("- ")]


def must(c: object) -> ConsolidatedMemory:
    assert isinstance(c, ConsolidatedMemory)
    return c


# --------------------------------------------------------------------- WorkingMemory.brief


def test_stays_silent_while_the_run_is_still_short_enough_to_see_its_own_results() -> None:
    m = WorkingMemory()
    for i in range(9):
        m.observe(Observation.read(f"a/{i}.ts"))
    assert m.brief() is None


def test_restates_changes_reads_with_counts_and_searches_once_the_run_is_long() -> None:
    m = WorkingMemory()
    m.observe(Observation.searched('search_code "canvas"'))
    m.observe(Observation.searched('search_code "canvas"'))
    for _ in range(6):
        m.observe(Observation.read("web/src/App.tsx"))
    m.observe(Observation.edited("web/src/Surface.tsx"))
    m.observe(Observation.deleted("web/src/Old.tsx"))
    brief = m.brief()
    assert brief is not None
    assert "## What this run has already established" in brief
    assert "Changed:\n- web/src/Surface.tsx" in brief
    assert "Deleted:\n- web/src/Old.tsx" in brief
    assert "- web/src/App.tsx (6×)" in brief
    assert '- search_code "canvas" (2×)' in brief
    # Verification is not discouraged.
    assert re.search(r"re-running a search to verify an edit is fine", brief)


def test_lets_the_host_count_its_own_activity_toward_the_threshold() -> None:
    m = WorkingMemory()
    m.observe(Observation.read("a.ts"))
    brief = m.brief(observations=12)
    assert brief is not None
    assert "- a.ts" in brief


# --------------------------------------------------------------------------- consolidate


def test_keys_by_where_most_of_the_work_was_ranks_changed_then_most_read() -> None:
    c = must(
        consolidate(
            snap(
                task="Move the   canvas",
                read=["web/src/a/x.ts", "web/src/a/x.ts", "web/src/a/y.ts"],
                edited=["web/src/a/z.ts", "DONE.md"],
            ),
            at=AT,
        )
    )
    assert c.key == "codemap:web/src/a"
    assert 'mapped 2026-10-24 by a run asked: "Move the canvas"' in c.content
    assert entries(c.content) == [
        "- web/src/a/z.ts (changed)",
        "- DONE.md (changed)",
        "- web/src/a/x.ts (read 2×)",
        "- web/src/a/y.ts",
    ]


def test_resolves_absolute_msys_and_dotted_paths_against_the_root_and_drops_noise() -> None:
    c = must(
        consolidate(
            snap(
                read=[
                    "C:\\code\\repo\\web\\src\\a.ts",
                    "/c/code/repo/web/src/b.ts",
                    "web/./src//c.ts",
                    "web/node_modules/x.js",
                    "web/dist/out.js",
                    "pnpm-lock.yaml",
                    "/elsewhere/d.ts",
                    "scripts/build/gen.ts",
                ]
            ),
            at=AT,
            root="C:\\code\\repo",
        )
    )
    assert c.key == "codemap:web/src"
    assert "- web/src/c.ts" in c.content
    assert "- scripts/build/gen.ts" in c.content
    assert not re.search(r"node_modules|dist|lock|elsewhere", c.content)


def test_skips_a_short_lookup_but_keeps_any_change() -> None:
    assert consolidate(snap(read=["a/b/c.ts", "a/b/d.ts"])) is None
    # 2026.10.27: the 3-file floor now holds for a run that changed files too (it used to
    # keep a one-file fix as a map). The kept-change half moved to `min_files`.
    assert consolidate(snap(edited=["api/src/r/x.ts"])) is None
    assert must(consolidate(snap(edited=["api/src/r/x.ts"]), min_files=1)).key == (
        "codemap:api/src/r"
    )


# -------------------------------------------------------------------- merge_consolidated


@pytest.fixture
def prior() -> str:
    return must(
        consolidate(snap(read=["w/s/a.ts", "w/s/b.ts"], edited=["w/s/c.ts"]), at=AT)
    ).content


def test_adds_a_small_run_to_the_area_map_restating_the_earlier_runs_edits(prior: str) -> None:
    nxt = must(consolidate(snap(task="fix d", edited=["w/s/d.ts"]), at=AT, min_files=1))
    merged = merge_consolidated(nxt.key, prior, nxt.content)
    assert 'asked: "fix d"' in merged
    assert entries(merged) == [
        "- w/s/d.ts (changed)",
        "- w/s/c.ts (changed earlier)",
        "- w/s/a.ts",
        "- w/s/b.ts",
    ]


def test_removes_a_file_this_run_deleted_and_never_stores_the_deletion_line(prior: str) -> None:
    nxt = must(consolidate(snap(deleted=["w/s/a.ts"], edited=["w/s/e.ts"]), at=AT, min_files=1))
    merged = merge_consolidated(nxt.key, prior, nxt.content)
    assert "w/s/a.ts" not in merged
    assert "(deleted)" not in merged
    assert "(deleted)" not in merge_consolidated(nxt.key, None, nxt.content)


def test_caps_the_map_and_says_how_many_more() -> None:
    big = must(consolidate(snap(read=[f"w/s/f{i}.ts" for i in range(12)]), at=AT))
    nxt = must(consolidate(snap(edited=["w/s/new.ts"]), at=AT, min_files=1))
    merged = merge_consolidated(nxt.key, big.content, nxt.content)
    assert len(entries(merged)) == 12
    assert "(+1 more file(s) touched)" in merged


def test_leaves_every_other_key_as_sent() -> None:
    assert merge_consolidated("learned:x", "old", "new") == "new"


# ------------------------------------------------------------------ beyond the seed tests


@pytest.mark.parametrize("kind", ["read", "created", "edited", "deleted", "searched"])
def test_observation_constructors_match_their_kind(kind: str) -> None:
    obs = getattr(Observation, kind)("x")
    assert obs == Observation(kind, "x")  # type: ignore[arg-type]
    assert obs.is_file is (kind != "searched")


def test_observation_rejects_a_bad_kind_naming_the_field_and_the_allowed_values() -> None:
    with pytest.raises(
        ValueError, match=r"Observation\.kind must be one of read, created.*'wrote'"
    ):
        Observation("wrote", "a.ts")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Observation\.target must be a str"):
        Observation("read", 3)  # type: ignore[arg-type]


def test_observation_is_frozen() -> None:
    obs = Observation.read("a.ts")
    with pytest.raises(AttributeError):
        obs.target = "b.ts"  # type: ignore[misc]


def test_a_blank_target_counts_toward_size_but_is_not_kept() -> None:
    m = WorkingMemory()
    m.observe(Observation.read("   "))
    m.observe(Observation.searched(""))
    m.observe(Observation.read(" a.ts "))
    assert m.size == 3
    assert m.snapshot["read"] == ["a.ts"]
    assert m.snapshot["searched"] == []


def test_set_task_collapses_whitespace_and_ignores_a_blank_task() -> None:
    m = WorkingMemory()
    m.set_task("  fix\n the   bug ")
    m.set_task("   ")
    assert m.task == "fix the bug"
    assert m.snapshot["task"] == "fix the bug"
    assert "task" not in WorkingMemory().snapshot


def test_snapshot_is_a_copy_the_caller_cannot_change_the_memory_through() -> None:
    m = WorkingMemory()
    m.observe(Observation.read("a.ts"))
    s = m.snapshot
    s["read"].append("b.ts")
    assert m.snapshot["read"] == ["a.ts"]


def test_snapshot_round_trips_through_plain_json() -> None:
    m = WorkingMemory()
    m.set_task("port the parser")
    m.observe_all(
        [
            Observation.read("src/p.py"),
            Observation.read("src/p.py"),
            Observation.edited("src/q.py"),
            Observation.searched('grep "parse"'),
            Observation.read(""),
        ]
    )
    for _ in range(6):
        m.observe(Observation.deleted("src/old.py"))
    restored = WorkingMemory.from_snapshot(json.loads(json.dumps(m.snapshot)))
    assert restored.snapshot == m.snapshot
    assert restored.size == m.size == 11
    assert restored.brief() == m.brief()
    assert restored.brief() is not None


def test_from_snapshot_reads_missing_lists_as_empty_and_counts_the_entries() -> None:
    m = WorkingMemory.from_snapshot({"read": ["a.ts", "b.ts"]})
    assert m.size == 2
    assert m.snapshot["edited"] == []


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (["read"], r"must be a mapping"),
        ({"reads": []}, r"Unknown working-memory snapshot key\(s\) \['reads'\]"),
        ({"read": "a.ts"}, r"'read' must be a list of str"),
        ({"edited": ["a.ts", 3]}, r"'edited' must be a list of str"),
        ({"task": 3}, r"'task' must be a str"),
        ({"observations": "2"}, r"'observations' must be an int"),
        ({"observations": True}, r"'observations' must be an int"),
        ({"read": ["a", "b"], "observations": 1}, r"no smaller than the number of recorded"),
    ],
)
def test_from_snapshot_rejects_malformed_input_with_a_clear_error(
    bad: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        WorkingMemory.from_snapshot(bad)  # type: ignore[arg-type]


def test_brief_lists_changed_once_and_leaves_changed_files_out_of_reads() -> None:
    m = WorkingMemory()
    m.observe_all([Observation.created("a.ts"), Observation.edited("a.ts")])
    m.observe_all([Observation.read("a.ts")] * 3 + [Observation.read("b.ts")] * 5)
    brief = m.brief()
    assert brief is not None
    assert brief.count("- a.ts") == 1
    assert "Read:\n- b.ts (5×)" in brief


def test_brief_caps_reads_and_searches() -> None:
    m = WorkingMemory()
    m.observe_all(Observation.read(f"r{i:02}.ts") for i in range(30))
    m.observe_all(Observation.searched(f"q{i:02}") for i in range(20))
    brief = m.brief()
    assert brief is not None
    assert "- r24.ts" in brief
    assert "- r25.ts" not in brief
    assert "- … 5 more" in brief
    assert "- q14" in brief
    assert "- q15" not in brief


def test_brief_is_silent_past_the_threshold_when_nothing_was_kept() -> None:
    m = WorkingMemory()
    m.observe_all([Observation.read("")] * 12)
    assert m.brief() is None


def test_brief_rejects_a_non_integer_count() -> None:
    with pytest.raises(ValueError, match=r"observations=\.\.\.\) must be an int"):
        WorkingMemory().brief(observations="12")  # type: ignore[arg-type]


def test_rank_by_count_puts_the_most_frequent_first_and_breaks_ties_by_name() -> None:
    assert rank_by_count(["b", "c", "a", "c", "b"]) == [("b", 2), ("c", 2), ("a", 1)]


@pytest.mark.parametrize(
    ("raw", "root", "expected"),
    [
        ("web/./src//c.ts", None, "web/src/c.ts"),
        ("./a/b.ts", None, "a/b.ts"),
        ("a/../../etc/passwd", None, None),
        ("/abs/a.ts", None, None),
        ("/abs/a.ts", "/", None),
        ("/repo/web/a.ts", "/repo/", "web/a.ts"),
        ("/Repo/web/a.ts", "/repo", None),
        ("c:\\CODE\\repo\\a.ts", "C:/code/repo", "a.ts"),
        ("web/.next/x.js", None, None),
        ("pkg/yarn.lock", None, None),
        ("", None, None),
    ],
)
def test_repo_path_canonicalises_and_rejects(
    raw: str, root: str | None, expected: str | None
) -> None:
    assert repo_path(raw, root) == expected


def test_consolidate_rejects_a_min_files_below_one() -> None:
    with pytest.raises(ValueError, match=r"min_files must be an int >= 1; got 0"):
        consolidate(snap(read=["a/b/c.ts"]), min_files=0)


def test_consolidate_takes_the_memory_itself_and_dates_in_utc() -> None:
    m = WorkingMemory()
    m.observe_all(Observation.read(f"a/b/{n}.ts") for n in "xyz")
    late_evening_west = datetime(2026, 10, 24, 22, 0, tzinfo=timezone(timedelta(hours=-5)))
    c = must(consolidate(m, at=late_evening_west))
    assert "(mapped 2026-10-25)." in c.content
    assert "asked" not in c.content
    naive = must(consolidate(m, at=datetime(2026, 1, 2, 23, 59)))
    assert "(mapped 2026-01-02)." in naive.content


def test_consolidate_lists_twelve_and_counts_the_rest() -> None:
    c = must(consolidate(snap(read=[f"w/s/f{i:02}.ts" for i in range(15)]), at=AT))
    assert len(entries(c.content)) == MAX_CONSOLIDATED_FILES
    assert c.content.endswith("(+3 more file(s) touched)")


def test_consolidate_carries_deletions_and_keys_a_deletion_only_run_by_them() -> None:
    c = must(consolidate(snap(deleted=["old/mod/a.ts", "old/mod/b.ts", "old/mod/c.ts"])))
    assert c.key == "codemap:old/mod"
    assert entries(c.content) == [f"- old/mod/{n}.ts (deleted)" for n in "abc"]
    # ... which the write rule turns into an empty map.
    assert map_entries(merge_consolidated(c.key, None, c.content)) == []


def test_consolidate_keys_root_level_work_as_root_and_bounds_task_and_key() -> None:
    c = must(consolidate(snap(task="x" * 500, read=["a.md", "b.md", "c.md"]), at=AT))
    assert c.key == "codemap:(root)"
    assert f'"{"x" * 200}"' in c.content
    assert f'"{"x" * 201}' not in c.content
    deep = "/".join(["d" * 100] * 4)
    assert len(consolidated_key(deep)) == 255
    assert consolidated_key(deep).startswith(CONSOLIDATED_KEY_PREFIX)


def test_merge_keeps_an_earlier_changed_earlier_and_skips_its_stale_deletion_lines() -> None:
    prior = "Code map for `w`.\n- w/a.ts (changed earlier)\n- w/z.ts (deleted)\n- w/b.ts (read 3×)"
    merged = merge_consolidated("codemap:w", prior, "Code map for `w` (new).\n- w/c.ts (changed)")
    assert merged.split("\n") == [
        "Code map for `w` (new).",
        "- w/c.ts (changed)",
        "- w/a.ts (changed earlier)",
        "- w/b.ts (read 3×)",
    ]


def test_map_entries_read_paths_with_parentheses() -> None:
    assert map_entries("- app/(auth)/page.tsx\n- app/(auth)/x.tsx (changed)") == [
        MapEntry("app/(auth)/page.tsx", None),
        MapEntry("app/(auth)/x.tsx", "changed"),
    ]


# -------------------------------------------------------------------- properties (hypothesis)

_paths = st.sampled_from(
    ["w/s/a.ts", "w/s/b.ts", "w/t/c.ts", "x/y/z/d.py", "README.md", "w/s/node_modules/n.js", " "]
)
_observations = st.lists(
    st.builds(
        Observation,
        st.sampled_from(["read", "created", "edited", "deleted", "searched"]),
        _paths,
    ),
    max_size=40,
)


@given(_observations, st.text(max_size=30))
def test_any_memory_round_trips_through_json_with_the_same_brief(
    observations: list[Observation], task: str
) -> None:
    m = WorkingMemory()
    m.set_task(task)
    m.observe_all(observations)
    restored = WorkingMemory.from_snapshot(json.loads(json.dumps(m.snapshot)))
    assert restored.snapshot == m.snapshot
    assert restored.brief() == m.brief()


@given(_observations, _observations)
def test_a_merged_map_never_holds_a_file_the_run_deleted_and_leads_with_the_run(
    earlier: list[Observation], later: list[Observation]
) -> None:
    first, second = WorkingMemory(), WorkingMemory()
    first.observe_all(earlier)
    second.observe_all(later)
    prior = consolidate(first, at=AT, min_files=1)
    nxt = consolidate(second, at=AT, min_files=1)
    if nxt is None:
        return
    merged = merge_consolidated(nxt.key, prior.content if prior else None, nxt.content)
    got = map_entries(merged)
    deleted = {e.path for e in map_entries(nxt.content) if e.note == "deleted"}
    assert not deleted & {e.path for e in got}
    assert all(e.note != "deleted" for e in got)
    assert len(got) <= MAX_CONSOLIDATED_FILES
    fresh = [e for e in map_entries(nxt.content) if e.note != "deleted"]
    assert got[: len(fresh)] == fresh[:MAX_CONSOLIDATED_FILES]
    assert len({e.path for e in got}) == len(got)


@pytest.mark.parametrize("module", [memory_module, consolidate_module])
def test_docstring_examples_run(module: object) -> None:
    result = doctest.testmod(module)  # type: ignore[arg-type]
    assert result.attempted > 0
    assert result.failed == 0
