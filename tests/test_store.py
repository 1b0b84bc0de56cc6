"""Code maps in a LangGraph store: the seed's write rule across runs, scope isolation,
relevance, recall, and persistence in an embedded SQLite file and on a PostgreSQL server
(the ``postgres`` cases: ``scripts/with-postgres.sh pytest -m postgres``)."""

from __future__ import annotations

import doctest
import importlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from langchain_builderforce_memory.store import CodeMap, CodeMapRecall, CodeMapStore
from langchain_builderforce_memory.working import (
    Observation,
    WorkingMemory,
    map_entries,
)

AT = datetime(2026, 10, 24, 12, 0, tzinfo=timezone.utc)
SCOPE = ("alice", "repo1")


def run(*observations: Observation, task: str | None = None) -> WorkingMemory:
    m = WorkingMemory()
    if task:
        m.set_task(task)
    m.observe_all(observations)
    return m


def entries(content: str) -> list[str]:
    return [line for line in content.split("\n") if line.startswith("- ")]


POSTGRES = pytest.param("postgres", marks=pytest.mark.postgres)


def opener(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[], AbstractContextManager[BaseStore]]:
    """Opens (again) one persistent store: an SQLite file, or a PostgreSQL database."""
    if backend == "postgres":
        from langgraph.store.postgres import PostgresStore

        url = request.getfixturevalue("postgres_url")
        return lambda: PostgresStore.from_conn_string(url)
    path = str(tmp_path / "maps.db")
    return lambda: SqliteStore.from_conn_string(path)


@pytest.fixture(params=["memory", "sqlite", POSTGRES])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    with opener(request.param, request, tmp_path)() as persistent:
        persistent.setup()
        yield persistent


@pytest.fixture(params=["memory", "aiosqlite", POSTGRES])
async def astore(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    if request.param == "postgres":
        from langgraph.store.postgres.aio import AsyncPostgresStore

        url = request.getfixturevalue("postgres_url")
        async with AsyncPostgresStore.from_conn_string(url) as postgres:
            await postgres.setup()
            yield postgres
        return
    async with AsyncSqliteStore.from_conn_string(str(tmp_path / "maps.db")) as sqlite:
        await sqlite.setup()
        yield sqlite


def first_run() -> WorkingMemory:
    return run(
        Observation.read("w/s/a.ts"), Observation.read("w/s/b.ts"), Observation.edited("w/s/c.ts")
    )


def test_two_runs_on_the_same_area_merge_into_one_map(store: BaseStore) -> None:
    maps = CodeMapStore(store, min_files=1)
    maps.save(first_run(), scope=SCOPE, at=AT)
    stored = maps.save(run(Observation.edited("w/s/d.ts"), task="fix d"), scope=SCOPE, at=AT)
    assert stored is not None
    assert 'asked: "fix d"' in stored.content
    assert entries(stored.content) == [
        "- w/s/d.ts (changed)",
        "- w/s/c.ts (changed earlier)",
        "- w/s/a.ts",
        "- w/s/b.ts",
    ]
    items = store.search(maps.namespace_for(SCOPE))
    assert [(i.key, i.value["content"]) for i in items] == [("codemap:w/s", stored.content)]


def test_a_deleted_file_leaves_the_map(store: BaseStore) -> None:
    maps = CodeMapStore(store, min_files=1)
    maps.save(first_run(), scope=SCOPE, at=AT)
    stored = maps.save(
        run(Observation.deleted("w/s/a.ts"), Observation.edited("w/s/e.ts")), scope=SCOPE, at=AT
    )
    assert stored is not None
    item = store.get(maps.namespace_for(SCOPE), "codemap:w/s")
    assert item is not None
    assert "w/s/a.ts" not in item.value["content"]
    assert "(deleted)" not in item.value["content"]
    assert [e.path for e in map_entries(item.value["content"])] == [
        "w/s/e.ts",
        "w/s/c.ts",
        "w/s/b.ts",
    ]


def test_a_map_left_with_no_entries_is_removed(store: BaseStore) -> None:
    maps = CodeMapStore(store)
    maps.save(run(*(Observation.read(f"w/s/{n}.ts") for n in "abc")), scope=SCOPE, at=AT)
    gone = maps.save(run(*(Observation.deleted(f"w/s/{n}.ts") for n in "abc")), scope=SCOPE, at=AT)
    assert gone is None
    assert store.get(maps.namespace_for(SCOPE), "codemap:w/s") is None


def test_one_scope_never_reads_another_scopes_maps(store: BaseStore) -> None:
    maps = CodeMapStore(store)
    scopes: list[str | tuple[str, ...]] = ["alice", ("alice", "repo1"), "alice2", ("bob", "repo1")]
    for i, scope in enumerate(scopes):
        maps.save(
            run(*(Observation.read(f"web/src/s{i}/{n}.ts") for n in "abc")), scope=scope, at=AT
        )
    for i, scope in enumerate(scopes):
        found = maps.maps_for("fix the web src page", scope=scope, limit=10)
        assert [m.key for m in found] == [f"codemap:web/src/s{i}"]
        assert f"s{i}/" in maps.recall_for(scope)("web", 10_000)
    assert maps.maps_for("web", scope="carol") == []
    assert maps.recall_for("carol")("web", 10_000) == ""


@pytest.mark.parametrize("backend", ["sqlite", POSTGRES])
def test_the_store_survives_reopening(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    reopen = opener(backend, request, tmp_path)
    with reopen() as first:
        first.setup()
        CodeMapStore(first).save(first_run(), scope=SCOPE, at=AT)
    with reopen() as second:
        maps = CodeMapStore(second, min_files=1)
        found = maps.maps_for(["w/s/b.ts"], scope=SCOPE)
        assert [m.key for m in found] == ["codemap:w/s"]
        maps.save(run(Observation.edited("w/s/d.ts")), scope=SCOPE, at=AT)
    with reopen() as third:
        (again,) = CodeMapStore(third).maps_for("w/s/d.ts", scope=SCOPE)
        assert entries(again.content)[:2] == [
            "- w/s/d.ts (changed)",
            "- w/s/c.ts (changed earlier)",
        ]


def test_the_stored_value_is_plain_json(store: BaseStore) -> None:
    maps = CodeMapStore(store)
    stored = maps.save(first_run(), scope="alice", at=AT)
    item = store.get(("builderforce_memory", "codemaps", "alice"), "codemap:w/s")
    assert item is not None
    assert stored is not None
    assert json.loads(json.dumps(item.value)) == {
        "key": "codemap:w/s",
        "content": stored.content,
        "area": "w/s",
        "updated_at": "2026-10-24T12:00:00+00:00",
    }


def test_a_short_lookup_is_not_stored_and_a_json_snapshot_is(store: BaseStore) -> None:
    maps = CodeMapStore(store)
    assert maps.save(run(Observation.read("a/b/c.ts")), scope=SCOPE) is None
    assert store.search(maps.namespace_for(SCOPE)) == []
    snapshot = json.loads(json.dumps(first_run().snapshot))
    stored = maps.save(snapshot, scope=SCOPE, at=AT)
    assert stored is not None
    assert stored.area == "w/s"
    with pytest.raises(ValueError, match=r"'read' must be a list of str"):
        maps.save({"read": "w/s/a.ts"}, scope=SCOPE)


def test_absolute_paths_are_stored_relative_to_the_root(store: BaseStore) -> None:
    maps = CodeMapStore(store, root="/work/repo")
    stored = maps.save(
        run(
            *(Observation.read(f"/work/repo/api/v1/{n}.py") for n in "abc"),
            Observation.read("/etc/x"),
        ),
        scope=SCOPE,
        at=AT,
    )
    assert stored is not None
    assert stored.key == "codemap:api/v1"
    assert [m.key for m in maps.maps_for(["/work/repo/api/v1/b.py"], scope=SCOPE)] == [
        "codemap:api/v1"
    ]


def _seed_areas(maps: CodeMapStore) -> None:
    maps.save(
        run(*(Observation.read(f"web/src/canvas/{n}.tsx") for n in ("Surface", "Toolbar", "Grid"))),
        scope=SCOPE,
        at=AT,
    )
    maps.save(
        run(
            *(Observation.read(f"api/routes/{n}.py") for n in ("users", "billing", "canvas_export"))
        ),
        scope=SCOPE,
        at=AT + timedelta(days=1),
    )
    maps.save(
        run(*(Observation.read(f"docs/guide/{n}.md") for n in ("intro", "setup", "faq"))),
        scope=SCOPE,
        at=AT,
    )


def test_maps_for_ranks_by_area_words_then_file_words(store: BaseStore) -> None:
    maps = CodeMapStore(store)
    _seed_areas(maps)
    found = maps.maps_for("Move the canvas toolbar", scope=SCOPE)
    # web/src/canvas: "canvas" names its area (2) + "toolbar" is a file (1);
    # api/routes: "canvas" is in one file name (1); docs/guide: nothing, left out.
    assert [m.area for m in found] == ["web/src/canvas", "api/routes"]
    assert [m.area for m in maps.maps_for("Move the canvas toolbar", scope=SCOPE, limit=1)] == [
        "web/src/canvas"
    ]


def test_maps_for_weighs_paths_named_in_the_task(store: BaseStore) -> None:
    maps = CodeMapStore(store)
    _seed_areas(maps)
    found = maps.maps_for("why does `api/routes/users.py` 500 on the canvas?", scope=SCOPE)
    assert found[0].area == "api/routes"
    by_paths = maps.maps_for(["docs/guide/faq.md", "docs/guide/new.md"], scope=SCOPE)
    assert [m.area for m in by_paths] == ["docs/guide"]


def test_maps_for_breaks_ties_by_the_most_recent_map(store: BaseStore) -> None:
    maps = CodeMapStore(store)
    for day, area in enumerate(["xyz/old", "xyz/new"]):
        memory = run(*(Observation.read(f"{area}/{n}.ts") for n in "abc"))
        maps.save(memory, scope=SCOPE, at=AT + timedelta(days=day))
    assert [m.area for m in maps.maps_for("xyz", scope=SCOPE)] == ["xyz/new", "xyz/old"]


def test_maps_for_pages_through_a_large_scope() -> None:
    store = InMemoryStore()
    maps = CodeMapStore(store)
    for i in range(130):
        maps.save(
            run(*(Observation.read(f"pkg/m{i:03}/{n}.go") for n in "abc")), scope=SCOPE, at=AT
        )
    # Saved last, so not on the first page of a store search.
    found = maps.maps_for("pkg/m129/a.go", scope=SCOPE, limit=1)
    assert [m.area for m in found] == ["pkg/m129"]


def test_maps_for_skips_values_it_did_not_write(store: BaseStore) -> None:
    maps = CodeMapStore(store)
    maps.save(first_run(), scope=SCOPE, at=AT)
    store.put(maps.namespace_for(SCOPE), "notes", {"text": "w s a"})
    assert [m.key for m in maps.maps_for("w/s/a.ts", scope=SCOPE)] == ["codemap:w/s"]


def test_recall_fits_whole_maps_best_first_within_the_budget(store: BaseStore) -> None:
    maps = CodeMapStore(store)
    _seed_areas(maps)
    recall = maps.recall_for(SCOPE)
    assert isinstance(recall, CodeMapRecall)
    best, second = maps.maps_for("canvas toolbar", scope=SCOPE)
    assert recall("canvas toolbar", 100_000) == f"{best.content}\n\n{second.content}"
    assert recall("canvas toolbar", len(best.content) + 1) == best.content
    cut = recall("canvas toolbar", 80)
    assert 0 < len(cut) <= 80
    assert best.content.startswith(cut)
    assert recall("canvas toolbar", 0) == ""
    assert recall("nothing relevant", 10_000) == ""


async def test_async_twins_save_merge_find_and_recall(astore: BaseStore) -> None:
    maps = CodeMapStore(astore, min_files=1)
    await maps.asave(first_run(), scope=SCOPE, at=AT)
    stored = await maps.asave(run(Observation.edited("w/s/d.ts"), task="fix d"), scope=SCOPE, at=AT)
    assert stored is not None
    assert entries(stored.content) == [
        "- w/s/d.ts (changed)",
        "- w/s/c.ts (changed earlier)",
        "- w/s/a.ts",
        "- w/s/b.ts",
    ]
    assert await maps.amaps_for("w/s/d.ts", scope=SCOPE) == [stored]
    assert await maps.amaps_for("w/s/d.ts", scope="bob") == []
    assert await maps.recall_for(SCOPE).acall("w/s/d.ts", 10_000) == stored.content
    gone = run(*(Observation.deleted(f"w/s/{n}.ts") for n in "abcd"))
    assert await maps.asave(gone, scope=SCOPE) is None
    assert await maps.amaps_for("w/s/d.ts", scope=SCOPE) == []
    assert await maps.asave(run(), scope=SCOPE) is None


def test_any_text_is_a_scope_label_and_no_two_scopes_meet(store: BaseStore) -> None:
    # LangGraph refuses '.' and NUL in a namespace label; the escape keeps labels apart.
    maps = CodeMapStore(store)
    scopes: list[Any] = [
        "alice@example.com",
        "alice@example%2Ecom",
        ("alice@example", "com"),
        ("github.com", "org/repo"),
        ("team", 7),
        "nul\x00byte",
    ]
    for i, scope in enumerate(scopes):
        maps.save(run(*(Observation.read(f"web/src/s{i}/{n}.ts") for n in "abc")), scope=scope)
    for i, scope in enumerate(scopes):
        (found,) = maps.maps_for("web src", scope=scope, limit=10)
        assert found.area == f"web/src/s{i}"
    assert maps.maps_for("web src", scope=("team", "7")) == maps.maps_for("web", scope=("team", 7))


@pytest.mark.parametrize(
    ("scope", "message"),
    [
        ((), r"scope must be a label or a non-empty sequence of labels; got \(\)"),
        (("alice", ""), r"scope labels must be non-empty text or whole numbers"),
        (("alice", None), r"scope labels must be non-empty text or whole numbers"),
        (True, r"scope labels must be non-empty text or whole numbers"),
    ],
)
def test_a_bad_scope_is_rejected_with_the_fix(scope: object, message: str) -> None:
    maps = CodeMapStore()
    with pytest.raises(ValueError, match=message):
        maps.save(first_run(), scope=scope)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        maps.maps_for("x", scope=scope)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        maps.recall_for(scope)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"namespace": ()}, r"namespace must name at least one label"),
        ({"namespace": None}, r"namespace must name at least one label"),
        ({"namespace": ("langgraph", "maps")}, r'may not start with "langgraph"'),
        ({"namespace": ("a.b",)}, r"namespace labels must be non-empty strings without '\.'"),
        ({"min_files": 0}, r"min_files must be an int >= 1; got 0"),
    ],
)
def test_bad_configuration_is_rejected_naming_the_value(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        CodeMapStore(**kwargs)  # type: ignore[arg-type]


def test_a_bad_limit_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"limit must be an int >= 1; got 0"):
        CodeMapStore().maps_for("x", scope="a", limit=0)
    with pytest.raises(ValueError, match=r"limit must be an int >= 1; got True"):
        CodeMapStore().recall_for("a", limit=True)


def test_code_map_round_trips_its_value() -> None:
    m = CodeMap(
        "codemap:a/b", "a/b", "Code map for `a/b`.\n- a/b/c.ts", "2026-10-24T12:00:00+00:00"
    )
    assert CodeMap(**{k: v for k, v in m.to_value().items()}) == m  # type: ignore[arg-type]


def test_docstring_examples_run() -> None:
    module = importlib.import_module("langchain_builderforce_memory.store")
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
