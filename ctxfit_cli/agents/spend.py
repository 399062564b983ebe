"""The tokens a session was billed for, as its log records them, per model: uncached input, cache
writes, cache reads and output. Plain counts (priced later, `replay/model_prices.py`), read in the
same pass over the records as the rest of the session's description (`meta.py`).

- **Claude Code**: `message.usage` of each reply (`input_tokens`, `cache_creation_input_tokens`,
  `cache_read_input_tokens`, `output_tokens`; the cache writes kept an hour,
  `cache_creation.ephemeral_1h_input_tokens`, apart: they cost more). The records of one reply (same `message.id` and
  `requestId`) repeat its usage as it streams; the last one holds the final output count, so a
  reply counts once, with its last record's usage (as ccusage counts it). A reply made in fast
  mode (`usage.speed: "fast"`, billed at its own rates) is counted under the model's name with
  `-fast` added, as ccusage names it, so that the price table prices it as such (or says it
  cannot). A sub-agent's replies written inline (2.1: `progress` records whose
  `data.type` is `agent_progress`, the reply in `data.message`) are the session's cost too:
  counted the same way, once per reply. (ccusage 20 counts only top-level records, so its cost of
  such a session leaves them out; the sub-agent's own log, when there is one, repeats them.)
- **Codex**: each `token_count` event's `last_token_usage`; OpenAI counts cached input inside
  `input_tokens`, so the uncached input is `input_tokens - cached_input_tokens` and the cached
  part is a cache read; reasoning is inside `output_tokens`. An event repeating the previous
  one's `total_token_usage` is the same call reported again and is dropped.

- **Gemini CLI**: each reply's `tokens` (`fleet/meta.py`): `cached` is a cache read, the rest of
  `input` (and `tool`, the tool-use prompt) uncached input, `output` and `thoughts` output (as
  ccusage counts them). Other agents record their calls with `Spend.call` in their own modules.

A call whose prompt is over 200,000 tokens is kept apart (`long`), since some models bill it at
their long-context rates.

>>> spend = Spend()
>>> spend.claude_code({"requestId": "r1", "message": {"id": "m1", "model": "claude-opus-4-6",
...     "usage": {"input_tokens": 3, "cache_read_input_tokens": 900, "output_tokens": 1}}})
>>> spend.claude_code({"requestId": "r1", "message": {"id": "m1", "model": "claude-opus-4-6",
...     "usage": {"input_tokens": 3, "cache_read_input_tokens": 900, "output_tokens": 40}}})
>>> spend.totals()
{('claude-opus-4-6', False): [3, 0, 900, 40, 0]}
"""

from __future__ import annotations

import sys
from itertools import chain

#: What a Claude Code reply made in fast mode adds to its model's name (ccusage's name for its rates).
FAST = "-fast"
#: The `progress` records of a Claude Code log that carry a sub-agent's records.
SUBAGENT = "agent_progress"
#: A prompt over this many tokens may be billed at a model's long-context rates.
LONG_CONTEXT = 200_000
#: A tally: (model, long) -> [uncached input, cache write, cache read, output, cache write kept 1 hour].
Tally = dict[tuple[str, bool], list[int]]
#: One call's spend, flat: (model, uncached input, cache write, cache read, output, cache write kept 1 hour).
Call = tuple
#: What a `Spend` holds, as plain data (a piece of a log read by another process sends it back):
#: each named reply's last record by `_reply_key`, then the calls with no reply id, in order.
Parts = tuple[dict[str, Call], list[Call]]


def count(value: object) -> int:
    """A token count as an agent's log records it: a positive int, else none (0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class Spend:
    """Tokens per model as a log's records are read (one `Spend` per session)."""

    def __init__(self) -> None:
        # Flat tuples under one string key each: a big log has a reply a few KB, and these are
        # what `estimate` holds of them all (a tuple of two ids and a list cost twice as much).
        self._replies: dict[str, Call] = {}
        self._unnamed: list[Call] = []
        self._sessions: list[Call] = []  # whole sessions' totals (`session_total`)
        self._codex_model = ""
        self._codex_last_total: object = None

    def claude_code(self, value: dict) -> None:
        """An assistant record of a Claude Code log."""
        body = value.get("message")
        if not isinstance(body, dict) or not isinstance(body.get("usage"), dict):
            return
        usage = body["usage"]
        model: str = body["model"] if isinstance(body.get("model"), str) else ""
        if model.startswith("<"):  # `<synthetic>`: written by Claude Code, not billed
            return
        if usage.get("speed") == "fast" and model:
            model += FAST
        counts = [
            count(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
        ]
        split = usage.get("cache_creation")
        hour = min(count(split.get("ephemeral_1h_input_tokens")), counts[1]) if isinstance(split, dict) else 0
        counts[1] -= hour
        call = (model, *counts, hour)
        reply = body.get("id")
        if isinstance(reply, str) and reply:
            self._replies[_reply_key(reply, str(value.get("requestId") or ""))] = call  # the last record wins
        else:
            self._unnamed.append(call)

    def claude_code_subagent(self, value: dict) -> None:
        """A `progress` record of a Claude Code log: a sub-agent's reply written inline is counted."""
        data = value.get("data")
        inner = data.get("message") if isinstance(data, dict) and data.get("type") == SUBAGENT else None
        if isinstance(inner, dict) and inner.get("type") == "assistant":
            self.claude_code(inner)

    def codex_model(self, model: object) -> None:
        """A Codex `turn_context`: the model of the calls that follow."""
        if isinstance(model, str) and model:
            self._codex_model = model

    def codex_usage(self, info: object) -> None:
        """A Codex `token_count` event's `info`."""
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            return
        total = info.get("total_token_usage")
        if total is not None and total == self._codex_last_total:
            return  # the same call reported again
        self._codex_last_total = total
        last = info["last_token_usage"]
        prompt, cached = count(last.get("input_tokens")), count(last.get("cached_input_tokens"))
        cached = min(cached, prompt)
        self._unnamed.append((self._codex_model, prompt - cached, 0, cached, count(last.get("output_tokens")), 0))

    def call(
        self,
        model: str,
        uncached: object = 0,
        cache_write: object = 0,
        cache_read: object = 0,
        output: object = 0,
        reply: str = "",
    ) -> None:
        """One call of any agent, as its log records it (counts that are not positive integers
        count 0). `reply`: the id of the reply, when the log repeats a reply's usage as it
        streams (the last one wins); "" for a call recorded once."""
        counted = (model, count(uncached), count(cache_write), count(cache_read), count(output), 0)
        if reply:
            self._replies[_reply_key(reply, "")] = counted
        else:
            self._unnamed.append(counted)

    def session_total(self, model: str, uncached: object = 0, output: object = 0) -> None:
        """What a whole session was billed for, where its log keeps no call apart (Goose's
        accumulated counts): priced at the model's ordinary rates, since no one call of it is
        known to be over the long-context threshold. (Such a log is never read in pieces:
        `parts` leaves these out.)"""
        self._sessions.append((model, count(uncached), 0, 0, count(output), 0))

    def parts(self) -> Parts:
        """What this spend holds, as plain data for `merge` (the models interned: pickled once)."""
        intern = sys.intern
        return {key: (intern(call[0]), *call[1:]) for key, call in self._replies.items()}, self._unnamed

    def merge(self, parts: Parts) -> None:
        """Add the `parts` of the records read after this spend's (a later reply's last record wins)."""
        replies, unnamed = parts
        self._replies.update(replies)
        self._unnamed.extend(unnamed)

    def totals(self) -> Tally:
        tally: Tally = {}
        for model, *counts in chain(self._replies.values(), self._unnamed):
            long = counts[0] + counts[1] + counts[2] + counts[4] > LONG_CONTEXT
            kept = tally.setdefault((model, long), [0, 0, 0, 0, 0])
            for k, count in enumerate(counts):
                kept[k] += count
        for model, *counts in self._sessions:
            kept = tally.setdefault((model, False), [0, 0, 0, 0, 0])
            for k, count in enumerate(counts):
                kept[k] += count
        return tally


def _reply_key(reply: str, request: str) -> str:
    """One string for a reply's (message id, request id), told apart whatever the ids hold."""
    return f"{len(reply)}:{reply}{request}"
