"""Putting per-file results together: the one place where many files become one report.

Results are taken in input order, whoever computed them (one process, `--jobs`, a cluster), so
the combined report is the same. A session read twice (the same log copied to two folders, or a
resumed Claude Code session whose new log repeats the old one's replies) is counted once:

- two sessions with the same agent and id are one; the one with more replies is kept (the first
  on a tie); one read from a log of usage only (Cline's `ui_messages.json`, beside the task's
  conversation in `api_conversation_history.json`) gives way to the conversation's, which
  takes its recorded cost and tokens where it records none (and its dates);
- a session whose reply ids all appear, in the same order from the start, in a longer session of
  the same agent is a copy of that session's beginning, and is left out;
- a sub-agent whose replies its parent's log holds inline (Claude Code 2.1's `agent_progress`)
  and whose own log is read too is counted in its own log's row: its cost is taken off the
  parent's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .work import FileResult, Unit

if TYPE_CHECKING:  # (the descriptions are read only for `sessions`: estimate does not load them)
    from .meta import SessionMeta


@dataclass
class Kept:
    path: str
    unit: Unit


@dataclass
class Combined:
    kept: list[Kept] = field(default_factory=list)
    #: Files that could not be read: (path, one-line error).
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: Files or sessions left out on purpose: (path, why).
    skipped: list[tuple[str, str]] = field(default_factory=list)
    files: int = 0

    @property
    def items(self) -> list:
        return [item for kept in self.kept for item in kept.unit.items]

    def to_dict(self) -> dict:
        """`errors` and `skipped` as they appear in every command's JSON."""
        return {
            "errors": [{"path": p, "error": e} for p, e in self.errors],
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
        }


def combine(results: list[FileResult]) -> Combined:
    """The units to report, in input order, each session once.

    >>> from ctxfit_cli.fleet.meta import SessionMeta
    >>> a = FileResult("a.jsonl", units=[Unit(SessionMeta("s1", "Codex"), [1])])
    >>> b = FileResult("copy/a.jsonl", units=[Unit(SessionMeta("s1", "Codex"), [1])])
    >>> combined = combine([a, b])
    >>> [k.path for k in combined.kept], combined.skipped
    (['a.jsonl'], [('copy/a.jsonl', 'the same session as a.jsonl (Codex s1): counted once')])
    """
    combined = Combined(files=len(results))
    candidates: list[Kept] = []
    for result in results:
        if result.error is not None:
            combined.errors.append((result.path, result.error))
        elif result.empty is not None:
            combined.skipped.append((result.path, f"no conversation in it ({result.empty.split(': ', 1)[-1]})"))
        else:
            candidates.extend(Kept(result.path, unit) for unit in result.units)
    chosen = _one_per_key(candidates, combined)
    combined.kept = _without_copies(chosen, combined)
    _subagents_once(combined.kept)
    return combined


def _subagents_once(kept: list[Kept]) -> None:
    """Take off a parent session's spend what its sub-agents cost where their own logs are read
    too (their sessions are named `<parent id>/<agent id>`, `meta.py`)."""
    by_key = {(k.unit.meta.agent, k.unit.meta.id): k.unit.meta for k in kept if k.unit.meta is not None}
    for agent, name in list(by_key):
        parent_id, _, agent_id = name.rpartition("/")
        parent = by_key.get((agent, parent_id)) if parent_id else None
        inline = getattr(parent, "inline_agents", None) or {}
        if parent is None or agent_id not in inline:
            continue
        spend = {key: list(counts) for key, counts in parent.spend.items()}
        for key, counts in inline[agent_id].items():
            left = spend.get(key)
            if left is not None:
                spend[key] = [max(0, a - b) for a, b in zip(left, counts)]
        parent.spend = {key: counts for key, counts in spend.items() if any(counts)}
        parent.inline_agents = {a: t for a, t in inline.items() if a != agent_id}


def _one_per_key(candidates: list[Kept], combined: Combined) -> list[Kept]:
    best: dict[tuple, Kept] = {}
    for kept in candidates:
        meta = kept.unit.meta
        if meta is None:
            best[("", id(kept))] = kept
            continue
        other = best.get(meta.key)
        if other is None or _rank(kept) > _rank(other):
            best[meta.key] = kept
    result = [kept for kept in candidates if any(kept is b for b in best.values())]
    for kept in candidates:
        if not any(kept is r for r in result):
            winner = best[_meta(kept).key]
            named = f"{_meta(kept).agent} {_meta(kept).id}"
            if _usage_only(kept) and not _usage_only(winner):
                _take_usage(_meta(winner), _meta(kept))
                combined.skipped.append((kept.path, f"the usage of the session in {winner.path} ({named}): one row"))
            else:
                combined.skipped.append((kept.path, f"the same session as {winner.path} ({named}): counted once"))
    return result


def _rank(kept: Kept) -> tuple[bool, int]:
    """Which of two readings of one session is kept: a conversation before a log of usage only,
    then the one with more replies."""
    return not _usage_only(kept), len(_meta(kept).message_ids)


def _usage_only(kept: Kept) -> bool:
    """Read from a log of usage only: nothing was estimated (`session_file.usage_part`)."""
    items = kept.unit.items
    return bool(items) and all(isinstance(item, dict) and item.get("estimated_peak", 0) is None for item in items)


def _take_usage(conversation: SessionMeta, usage: SessionMeta) -> None:
    """The recorded usage of a session's log of usage only, given to its conversation's row
    where that records none; the dates of both."""
    if not conversation.spend and getattr(conversation, "usd", None) is None:
        conversation.spend, conversation.usd = usage.spend, getattr(usage, "usd", None)
    for moment in (usage.started, usage.last):
        if moment is not None:
            conversation.started = moment if conversation.started is None else min(conversation.started, moment)
            conversation.last = moment if conversation.last is None else max(conversation.last, moment)


def _meta(kept: Kept) -> SessionMeta:
    """The description of a session kept by its description (one without is never compared)."""
    assert kept.unit.meta is not None
    return kept.unit.meta


def _without_copies(chosen: list[Kept], combined: Combined) -> list[Kept]:
    """Leave out sessions whose replies are the beginning of a longer session's."""
    by_first: dict[tuple[str, str], list[Kept]] = {}
    for kept in chosen:
        meta = kept.unit.meta
        if meta is not None and meta.message_ids:
            by_first.setdefault((meta.agent, meta.message_ids[0]), []).append(kept)
    copies: set[int] = set()
    for group in by_first.values():
        group = sorted(group, key=lambda k: -len(_meta(k).message_ids))
        for shorter in group[1:]:
            ids = _meta(shorter).message_ids
            longer = next(
                (g for g in group if len(_meta(g).message_ids) > len(ids) and _meta(g).message_ids[: len(ids)] == ids),
                None,
            )
            if longer is not None:
                copies.add(id(shorter))
                combined.skipped.append(
                    (
                        shorter.path,
                        f"its replies are the start of {longer.path} "
                        f"({_meta(shorter).agent} {_meta(longer).id}): counted once",
                    )
                )
    return [kept for kept in chosen if id(kept) not in copies]
