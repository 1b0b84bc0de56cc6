"""The record's full-text index: each message's text, indexed once, searched by SQLite FTS5.

Ranking is the library's, not ours. One SQLite database in memory (the standard library's
``sqlite3``, FTS5) holds each message's text once, indexed twice:

- a ``trigram`` FTS5 table answers EXACT substring queries (paths, identifiers, error
  text; case-insensitive), ordered by FTS5's ``bm25`` over the trigrams;
- a ``porter unicode61`` FTS5 table answers the query's words (any of them), ordered by
  ``bm25``, for what no substring matches.

Substring hits come first, then the word hits not already shown. The snippets are
FTS5's ``snippet()`` for word hits and the text around the first occurrence for substring
hits. Nothing here calls a model or the summarizer.

The index is built incrementally: the record is append-only, so each search indexes only
the messages added since the last one (O(new messages)); a record that was rewritten
under it (a message removed or replaced: the ids at a few sampled positions moved) is
indexed again from scratch. :class:`RecordIndexes` keeps one index per thread. The
searches and the answers built from the hits are in :mod:`langchain_builderforce_memory.search`.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_builderforce_memory.blocks import (
    result_keys,
    result_parts,
    tool_result_ids,
    valid_calls,
)
from langchain_builderforce_memory.jsontext import json_text, without_opaque
from langchain_builderforce_memory.media import media_label, nested_media
from langchain_builderforce_memory.messages import Role, clean_text, message_id, role_of

__all__ = [
    "MAX_SEARCH_LIMIT",
    "RecordIndex",
    "RecordIndexes",
    "SearchHit",
    "SearchResult",
    "message_search_text",
]

MAX_SEARCH_LIMIT: Final = 50
"""Hits one search returns at the most (a larger ``limit`` is lowered to this)."""

SNIPPET_CHARS: Final = 480
"""Characters of text shown around a substring match (word hits: FTS5's snippet)."""

_SNIPPET_WORDS: Final = 48
"""Tokens FTS5's ``snippet()`` shows around a word match (its maximum is 64)."""

_ARGS_CHARS: Final = 240
"""A tool call's arguments are shown up to this many characters."""

_MAX_QUERY_WORDS: Final = 32
"""Words of a long query (a pasted directive) that are searched at most."""

MAX_EXACT_CHARS: Final = 160
"""Longer queries (a pasted directive, the packer's recall) are searched by their words
only: a trigram phrase of hundreds of characters is no identifier, and over repetitive
text (a run of one character) FTS5's phrase matching costs its length times the text's."""

_WORD: Final = re.compile(r"\w+", re.UNICODE)


def _block_text(block: object) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, dict):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return str(block["text"])
        if (keys := result_keys(block)) is not None:  # a user turn's answer: its output
            content = block.get(keys[1])
            parts = result_parts(content) if isinstance(content, list) else [content or ""]
            return "\n".join(map(_block_text, parts))
        label = media_label(block)  # a base64 payload is not text anyone searches for
        if label is not None:
            return label
        return json_text(nested_media(without_opaque(block))[0])
    return json_text(block)


def message_search_text(message: BaseMessage) -> str:
    r"""The text of ``message`` that search sees: its content, then its tool calls.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> call = AIMessage("reading", tool_calls=[
        ...     {"name": "read_file", "args": {"path": "a.py"}, "id": "c1"}])
        >>> message_search_text(call)
        'reading\nread_file {"path": "a.py"}'
    """
    content = message.content
    text = content if isinstance(content, str) else "\n".join(map(_block_text, content))
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = (f"{c['name']} {json_text(c['args'])}" for c in message.tool_calls)
        text = "\n".join([text, *calls]) if text else "\n".join(calls)
    return text


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One message that matched."""

    position: int
    """Its index in the record (0 is the first message)."""
    role: Role
    """``"user"``, ``"assistant"``, ``"tool"`` or ``"system"``."""
    message_id: str
    """Its id (``message_id``)."""
    snippet: str
    """The text around the match."""
    exact: bool
    """The query occurs in it verbatim (case-insensitive); else it shares words with it."""
    tool_name: str | None = None
    """For a tool result: the tool that produced it."""
    tool_args: str | None = None
    """For a tool result: its call's arguments as JSON (long ones cut)."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What one search found: the best hits and how many matched in all."""

    query: str
    """The query as searched (stripped)."""
    hits: tuple[SearchHit, ...]
    """The best hits, best first: substring matches, then word matches."""
    total: int
    """Messages that matched among those searched (``len(hits)`` at the least)."""
    searched: int
    """Messages searched (the record less what the view shows)."""
    record_size: int
    """Messages in the record."""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _excerpt(text: str, query: str, chars: int) -> str:
    """The text around the first case-insensitive occurrence of ``query``."""
    found = re.search(re.escape(query), text, re.IGNORECASE)
    if found is None:
        return _cut(text, chars)
    room = max(0, chars - (found.end() - found.start()))
    start = max(0, found.start() - room // 2)
    end = min(len(text), start + chars)
    start = max(0, end - chars)
    return ("…" if start > 0 else "") + text[start:end] + ("…" if end < len(text) else "")


def _phrase(text: str) -> str:
    """``text`` as one FTS5 string (double quotes doubled: no query syntax gets through)."""
    return '"' + text.replace('"', '""') + '"'


def _like_pattern(query: str) -> str:
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_SCHEMA: Final = (
    "CREATE TABLE docs(body TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE grams USING fts5(body, content='docs', tokenize='trigram')",
    "CREATE VIRTUAL TABLE words USING fts5(body, content='docs', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TEMP TABLE hidden(pos INTEGER PRIMARY KEY)",
)


@dataclass(frozen=True, slots=True)
class _Meta:
    role: Role
    message_id: str
    tool_call_id: str | None


def _open_index_db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    for statement in _SCHEMA:
        db.execute(statement)
    return db


class RecordIndex:
    """An incrementally built full-text index over one append-only record.

    Thread-safe (one lock; parallel tool calls of one thread share it). Its memory is
    the record's text plus the two FTS5 indexes.

    Example:
        >>> from langchain_core.messages import HumanMessage, ToolMessage
        >>> index = RecordIndex()
        >>> record = [HumanMessage("fix it"), ToolMessage("E42 in lexer.py", tool_call_id="c")]
        >>> [h.position for h in index.search(record, "lexer.py").hits]
        [1]
    """

    def __init__(self, *, skip_tools: Collection[str] = ()) -> None:
        self._skip_tools = frozenset(skip_tools)
        """Tool results of these tools are not searched (a search answer quotes others)."""
        self._db = _open_index_db()
        self._closed = False
        self._lock = threading.Lock()
        self._meta: list[_Meta] = []
        self._positions: dict[str, list[int]] = {}
        self._calls: dict[str, tuple[str, str]] = {}
        self.rebuilds = 0
        """How many times a rewritten record was indexed again from scratch."""

    def __len__(self) -> int:
        return len(self._meta)

    def close(self) -> None:
        """Free the database; a later use indexes its record again, from scratch.

        Takes the lock: an LRU eviction (:class:`RecordIndexes`) may close an index that
        another thread is searching, and closing an SQLite connection under a running
        query crashes the process.
        """
        with self._lock:
            self._db.close()
            self._closed = True

    # ----------------------------------------------------------------- indexing

    def _matches(self, record: Sequence[BaseMessage]) -> bool:
        """Whether ``record`` still begins with what was indexed (ids at sampled places)."""
        n = len(self._meta)
        if n == 0:
            return True
        if n > len(record):
            return False
        probe = 1
        places = {0, n - 1}
        while probe < n:  # O(log n) probes: catches a removal or an insertion anywhere
            places.add(n - 1 - probe)
            probe *= 2
        return all(message_id(record[i]) == self._meta[i].message_id for i in places if i >= 0)

    def _reset(self) -> None:
        self._db.execute("DELETE FROM docs")
        self._db.execute("INSERT INTO grams(grams) VALUES ('delete-all')")
        self._db.execute("INSERT INTO words(words) VALUES ('delete-all')")
        self._meta.clear()
        self._positions.clear()
        self._calls.clear()
        self.rebuilds += 1

    def _add(self, record: Sequence[BaseMessage], start: int) -> None:
        rows: list[tuple[int, str]] = []
        metas: list[_Meta] = []
        calls: dict[str, tuple[str, str]] = {}
        for pos in range(start, len(record)):
            m = record[pos]
            answers = tool_result_ids(m)  # an Anthropic-native turn of results
            call_id = (
                m.tool_call_id
                if isinstance(m, ToolMessage)
                else answers[0]
                if len(answers) == 1
                else None
            )
            for key, (name, args) in valid_calls(m).items():
                calls[key] = (name, json_text(args))
            metas.append(_Meta(role_of(m), message_id(m), call_id))
            skip = isinstance(m, ToolMessage) and m.name in self._skip_tools
            # SQLite takes UTF-8 only: a lone surrogate (undecodable bytes) is replaced.
            body = "" if skip else clean_text(message_search_text(m))
            rows.append((pos + 1, body))  # rowid = pos + 1
        self._insert(rows)
        # Only what the database holds is known: a failed insert leaves the index as it was.
        for pos, meta in enumerate(metas, start):
            self._meta.append(meta)
            self._positions.setdefault(meta.message_id, []).append(pos)
        self._calls.update(calls)

    def _insert(self, rows: list[tuple[int, str]]) -> None:
        if not rows:
            return
        self._db.execute("BEGIN")
        try:
            for table in ("docs", "grams", "words"):
                self._db.executemany(f"INSERT INTO {table}(rowid, body) VALUES (?, ?)", rows)
        except BaseException:
            self._db.execute("ROLLBACK")  # else every later BEGIN fails on this connection
            raise
        self._db.execute("COMMIT")

    def sync(self, record: Sequence[BaseMessage]) -> None:
        """Index what ``record`` added since the last call (all of it if it was rewritten)."""
        with self._lock:
            self._sync(record)

    def _sync(self, record: Sequence[BaseMessage]) -> None:
        if self._closed:  # evicted while a caller still held it: start over
            self._db = _open_index_db()
            self._closed = False
            self._meta.clear()
            self._positions.clear()
            self._calls.clear()
        if not self._matches(record):
            self._reset()
        self._add(record, len(self._meta))

    # ------------------------------------------------------------------ search

    def search(
        self,
        record: Sequence[BaseMessage],
        query: str,
        *,
        limit: int = 5,
        hidden_ids: Collection[str] = (),
        end: int | None = None,
        snippet_chars: int = SNIPPET_CHARS,
    ) -> SearchResult:
        """The messages of ``record[:end]`` that match ``query``, less ``hidden_ids``.

        Args:
            record: The whole record (indexed first, incrementally).
            query: A substring or words; stripped. Empty: no hits.
            limit: Hits to return (1 to :data:`MAX_SEARCH_LIMIT`).
            hidden_ids: Ids of messages NOT to return: those the model's view shows.
            end: Search only ``record[:end]`` (default: all of it).
            snippet_chars: Characters of text around a substring match.
        """
        # SQLite reads a query string up to its first NUL: the rest left it unterminated.
        text = clean_text(query.replace("\x00", " ").strip())
        limit = max(1, min(limit, MAX_SEARCH_LIMIT))
        with self._lock:
            self._sync(record)
            stop = len(self._meta) if end is None else max(0, min(end, len(self._meta)))
            hidden = sorted(
                {p + 1 for i in hidden_ids for p in self._positions.get(i, ()) if p < stop}
            )
            if not text:
                return SearchResult(text, (), 0, stop - len(hidden), len(record))
            self._db.execute("DELETE FROM hidden")
            self._db.executemany("INSERT INTO hidden(pos) VALUES (?)", ((p,) for p in hidden))
            hits, total = self._query(text, limit, stop, snippet_chars)
        return SearchResult(text, tuple(hits), total, stop - len(hidden), len(record))

    def _substring_sql(self, text: str) -> tuple[str, str, str]:
        """(ranked rows, plain rowids, argument) of the messages holding ``text``."""
        # FTS5's trigram index serves queries of 3+ characters; shorter ones scan with LIKE.
        if len(text) >= 3:
            where = "FROM grams WHERE grams MATCH ?"
            return f"SELECT rowid, rank {where}", f"SELECT rowid {where}", _phrase(text)
        where = "FROM docs WHERE body LIKE ? ESCAPE '\\'"
        return f"SELECT rowid, 0 AS rank {where}", f"SELECT rowid {where}", _like_pattern(text)

    def _distinctive(self, text: str) -> str | None:
        """The query's words that BM25 can rank by, as one FTS5 ``OR`` query.

        A word in more than half of the messages has a BM25 weight of zero (FTS5 clamps
        its negative IDF to a tiny constant): it ranks nothing, yet scoring every message
        it is in is most of a search's cost, so it is left out.
        """
        half = len(self._meta) // 2
        kept: list[str] = []
        for word in list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:_MAX_QUERY_WORDS]:
            (df,) = self._db.execute(
                "SELECT count(*) FROM words WHERE words MATCH ?", (_phrase(word),)
            ).fetchone()
            if 0 < int(df) <= max(half, 1):
                kept.append(_phrase(word))
        return " OR ".join(kept) if kept else None

    def _query(
        self, text: str, limit: int, stop: int, snippet_chars: int
    ) -> tuple[list[SearchHit], int]:
        keep = "rowid <= ? AND rowid NOT IN (SELECT pos FROM hidden)"
        hits: list[SearchHit] = []
        matched: list[tuple[str, str]] = []  # (rowid query, its argument) per tier
        if len(text) <= MAX_EXACT_CHARS:
            sub_sql, sub_ids, sub_arg = self._substring_sql(text)
            exact_rows = self._db.execute(
                f"SELECT rowid FROM ({sub_sql}) WHERE {keep} ORDER BY rank, rowid DESC LIMIT ?",
                (sub_arg, stop, limit),
            ).fetchall()
            hits = [self._substring_hit(row[0], text, snippet_chars) for row in exact_rows]
            matched.append((sub_ids, sub_arg))
        words = self._distinctive(text)
        if words is not None:
            matched.append(("SELECT rowid FROM words WHERE words MATCH ?", words))
        if not matched:
            return hits, 0
        union = " UNION ".join(sql for sql, _ in matched)
        (total,) = self._db.execute(
            f"SELECT count(*) FROM ({union}) WHERE {keep}", (*(a for _, a in matched), stop)
        ).fetchone()
        if words is not None and len(hits) < limit:
            seen = {h.position + 1 for h in hits}
            rows = self._db.execute(
                "SELECT rowid, snippet(words, 0, '', '', '…', ?) FROM words "
                f"WHERE words MATCH ? AND {keep} ORDER BY rank, rowid DESC LIMIT ?",
                (_SNIPPET_WORDS, words, stop, limit + len(seen)),
            ).fetchall()
            for rowid, snippet in rows:
                if rowid not in seen and len(hits) < limit:
                    hits.append(self._hit(rowid - 1, str(snippet), exact=False))
        return hits, max(int(total), len(hits))

    def _substring_hit(self, rowid: int, text: str, snippet_chars: int) -> SearchHit:
        (body,) = self._db.execute("SELECT body FROM docs WHERE rowid = ?", (rowid,)).fetchone()
        return self._hit(rowid - 1, _excerpt(str(body), text, snippet_chars), exact=True)

    def _hit(self, position: int, snippet: str, *, exact: bool) -> SearchHit:
        meta = self._meta[position]
        call = self._calls.get(meta.tool_call_id) if meta.tool_call_id else None
        return SearchHit(
            position=position,
            role=meta.role,
            message_id=meta.message_id,
            snippet=snippet,
            exact=exact,
            tool_name=call[0] if call else None,
            tool_args=_cut(call[1], _ARGS_CHARS) if call else None,
        )


class RecordIndexes:
    """One :class:`RecordIndex` per thread, the least recently used dropped past ``size``.

    An index holds its record's text plus two FTS5 indexes in memory (the trigram one is
    the larger: a few times the text), so only the threads in use are kept; a dropped
    thread is indexed again on its next search.

    Example:
        >>> indexes = RecordIndexes(size=2)
        >>> indexes.get("thread-1") is indexes.get("thread-1")
        True
    """

    def __init__(self, size: int = 8, *, skip_tools: Collection[str] = ()) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            msg = f"size must be an int >= 1 (indexes kept); got {size!r}."
            raise ValueError(msg)
        self._size = size
        self._skip_tools = frozenset(skip_tools)
        self._indexes: OrderedDict[str, RecordIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> RecordIndex:
        """The index kept for ``key`` (a thread id), made on first use."""
        with self._lock:
            index = self._indexes.get(key)
            if index is None:
                index = self._indexes[key] = RecordIndex(skip_tools=self._skip_tools)
            self._indexes.move_to_end(key)
            while len(self._indexes) > self._size:
                _, old = self._indexes.popitem(last=False)
                old.close()
            return index
