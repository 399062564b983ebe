"""The running counts of one session being watched: what its next request holds, kept up to date
record by record so that a log is never read twice (DESIGN §11's anchoring, incrementally).

The next request is the last reported one plus what was written since:

    now = reported(last call) + est(records written after it) [+ reasoning re-sent within a turn]

and, before any call reported its size (or after a compaction, until the next one does), the
estimate of the conversation plus the unlogged fixed part the first call showed (system prompt,
tools). Each call's size is kept (`sizes`), so the growth per call at the recent rate says how
many calls are left before the window and before the agent's own compaction.

>>> tally = Tally("claude-code")
>>> tally.added(1_000); tally.reported(26_000); tally.added(500); tally.reported(30_000); tally.added(700)
>>> tally.size, tally.confirmed, tally.fixed, tally.growth_per_call()
(30700, 30000, 25000, 4000.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The growth per call is the mean over this many of the latest calls.
RECENT_CALLS = 5


@dataclass
class Tally:
    """What a follower knows of one session so far."""

    format: str
    id: str = ""
    project: str = ""
    models: list[str] = field(default_factory=list)
    #: The window the log recorded (Codex), else None (the model's is looked up).
    window: int | None = None
    last_activity: str | None = None
    #: The size the latest call reported; None before any, and after a compaction until the next.
    confirmed: int | None = None
    #: Estimated tokens written since that call's request (its reply included).
    since: int = 0
    #: Estimated tokens of the whole conversation (since its last compaction).
    total: int = 0
    #: The unlogged part of every prompt, from the first call that reported its size.
    fixed: int = 0
    fixed_known: bool = False
    #: Each model call's prompt size in this conversation (reported, or estimated when the log
    #: records none), in order.
    sizes: list[int] = field(default_factory=list)
    calls: int = 0
    compactions: int = 0
    #: Reasoning the latest call produced, re-sent with the next request of its turn (Codex),
    #: the reasoning of the turn's earlier calls inside the reported size, and whether a new
    #: user turn began since (which drops them all).
    reasoning: int = 0
    turn_reasoning: int = 0
    new_turn: bool = False

    def added(self, tokens: int) -> None:
        """Records that the next request will carry, estimated at `tokens`."""
        self.since += tokens
        self.total += tokens

    def reported(self, prompt: int, *, since: int = 0, reasoning: int = 0) -> None:
        """A model call whose prompt held `prompt` tokens; `since` of the tokens added so far
        were written after that prompt was sent (its reply, when the log writes the usage
        after it)."""
        if not self.fixed_known:
            self.fixed, self.fixed_known = max(prompt - (self.total - since), 0), True
        if self.new_turn:
            self.turn_reasoning = 0
        elif self.confirmed is not None:
            self.turn_reasoning += self.reasoning
        self.confirmed, self.since = prompt, since
        self.reasoning, self.new_turn = reasoning, False
        self.sizes.append(prompt)
        self.calls += 1

    def estimated_call(self) -> None:
        """A model call whose log records no size: its prompt is the estimate so far."""
        self.sizes.append(self.size)
        self.calls += 1

    def human_turn(self) -> None:
        self.new_turn = True

    def compacted(self) -> None:
        """The agent compacted: the conversation starts anew (the summary is added next)."""
        self.confirmed, self.since, self.total, self.sizes = None, 0, 0, []
        self.reasoning = self.turn_reasoning = 0
        self.compactions += 1

    def saw(self, timestamp: str | None) -> None:
        if timestamp and (self.last_activity is None or timestamp > self.last_activity):
            self.last_activity = timestamp

    def model(self, name: object) -> None:
        if isinstance(name, str) and name and not name.startswith("<") and name not in self.models:
            self.models.append(name)

    @property
    def size(self) -> int:
        """The next request's size, everything kept."""
        if self.confirmed is None:
            return self.fixed + self.total
        carried = -self.turn_reasoning if self.new_turn else self.reasoning
        return self.confirmed + self.since + carried

    def growth_per_call(self) -> float | None:
        """Mean growth of the prompt over the latest calls (None with fewer than two)."""
        recent = self.sizes[-(RECENT_CALLS + 1) :]
        if len(recent) < 2:
            return None
        return (recent[-1] - recent[0]) / (len(recent) - 1)


def calls_left(size: int, limit: int | None, growth: float | None) -> int | None:
    """Calls before a request of `size` growing by `growth` per call passes `limit` (0: it
    already has); None when unknown or not growing.

    >>> calls_left(150_000, 167_000, 4_000), calls_left(170_000, 167_000, 4_000), calls_left(1, 9, -2.0)
    (4, 0, None)
    """
    if limit is None:
        return None
    if size >= limit:
        return 0
    if not growth or growth <= 0:
        return None
    return int((limit - size) // growth)
