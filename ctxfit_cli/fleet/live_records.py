"""Each record of a log being written, as it arrives, into its session's `Tally`: the sizes its
calls reported and the estimate of what was written since (the readers' rules, one record at a
time; `formats/claude_code.py` and `formats/codex.py` say what the records are).

- **Claude Code**: a reply (a new `message.id`) is a call; its `message.usage` is the prompt it
  was sent. Every record of the conversation adds the estimate of its `message.content`.
  `<synthetic>` replies are not calls and not sent; sidechain records are skipped in a main log
  (a sub-agent's own log is read whole); a `compact_boundary` starts the conversation anew.
- **Codex**: a `token_count` event is a call (repeats dropped, as `codex.Runs` does); it comes
  after its run of reply items (or, in Codex 0.40, before them), so the items of the latest run
  are what was written after that prompt. Each response item adds its own estimate
  (`codex.item_message`); the system prompt (`session_meta`) joins the first conversation;
  `compacted` starts anew with its replacement history.

A record whose content cannot be read is counted at 4 characters per token (it is still sent).
"""

from __future__ import annotations

from ..agents import claude_code
from ..agents import codex as codex_agent
from ..core.costs import message_cost
from ..core.model import Message
from ..counters.models import counter_for_models
from ..counters.seed import SEED, Counter
from ..errors import CtxfitError
from ..formats import anthropic, codex, openai
from ..formats.claude_code import SYNTHETIC
from ..formats.common import Where, dumps
from ..formats.usage import claude_code_call
from .meta import utc
from .tally import Tally


class Records:
    """A format's records into a tally; what every format shares: the estimate of one message."""

    def __init__(self, tally: Tally, path: str) -> None:
        self.tally, self.path = tally, path
        self._counters: dict[str, Counter] = {}

    def feed(self, value: object, line: int) -> None:
        """One record of the log (at `line`), into the tally."""
        raise NotImplementedError

    def __getstate__(self) -> dict:
        """What a kept state holds (`live_state.py`): not the loaded counters, loaded again."""
        return {k: v for k, v in self.__dict__.items() if k != "_counters"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _counters={})

    def counter(self) -> Counter:
        model = self.tally.models[-1] if self.tally.models else ""
        if model not in self._counters:
            self._counters[model] = counter_for_models([model])[0] if model else SEED
        return self._counters[model]

    def estimate(self, parse, message: dict, line: int) -> tuple[int, Message | None]:
        raw = dumps(message)
        try:
            parsed = parse(message, raw, Where(self.path, line))
        except CtxfitError:
            return len(raw) // 4 + 1, None
        return message_cost(parsed, self.counter()).tokens, parsed


class ClaudeCodeRecords(Records):
    def __init__(self, tally: Tally, path: str) -> None:
        super().__init__(tally, path)
        self.sidechain: bool | None = None
        self.reply_id: object = None

    def feed(self, value: object, line: int) -> None:
        if not isinstance(value, dict):
            return
        tally = self.tally
        tally.saw(utc(value.get("timestamp")))
        kind = value.get("type")
        if kind == "system" and value.get("subtype") == "compact_boundary":
            tally.compacted()
            self.reply_id = None
            return
        message = value.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict) or "content" not in message:
            return
        if self.sidechain is None:
            self.sidechain = bool(value.get("isSidechain"))
            tally.id = str(value.get("sessionId") or "") + (
                f"/{value['agentId']}" if self.sidechain and value.get("agentId") else ""
            )
            tally.project = str(value.get("cwd") or "")
        if bool(value.get("isSidechain")) != self.sidechain:
            return
        if kind == "assistant":
            if message.get("model") == SYNTHETIC:
                return
            tally.model(message.get("model"))
            self._reply(value, message)
        tokens, parsed = self.estimate(anthropic.parse_message, {"role": kind, "content": message["content"]}, line)
        if parsed is not None and parsed.is_human_turn:
            tally.human_turn()
        tally.added(tokens)

    def _reply(self, value: dict, message: dict) -> None:
        reply_id = message.get("id")
        if reply_id is not None and reply_id == self.reply_id:
            return  # another content block of the same call
        self.reply_id = reply_id
        call = claude_code_call(value, 0)
        if call is not None and call.prompt_tokens:
            self.tally.reported(call.prompt_tokens)
        else:
            self.tally.estimated_call()


class CodexRecords(Records):
    def __init__(self, tally: Tally, path: str) -> None:
        super().__init__(tally, path)
        self.system_seen = False
        self.system = 0  # the system prompt's estimate: every conversation of the rollout opens with it
        self.run_open = False
        self.run_start = 0  # the conversation's estimate when the latest run of reply items began
        self.runs_seen = False
        self.after: bool | None = None  # usage events follow their runs (None: not known yet)
        self.last_total: object = None

    def feed(self, value: object, line: int) -> None:
        if not isinstance(value, dict) or not isinstance(value.get("payload"), dict):
            return
        tally, payload, kind = self.tally, value["payload"], value.get("type")
        tally.saw(utc(value.get("timestamp")))
        if kind == "session_meta" and not self.system_seen:
            self.system_seen = True
            tally.id, tally.project = str(payload.get("id") or ""), str(payload.get("cwd") or "")
            prompt = codex.instructions(payload)
            if prompt:
                self.system = self.estimate(openai.parse_message, {"role": "system", "content": prompt}, line)[0]
                tally.added(self.system)
        elif kind == "turn_context":
            tally.model(payload.get("model"))
            self.run_open = False
        elif kind == "event_msg" and payload.get("type") == "token_count":
            self._usage(payload.get("info"))
        elif kind == "compacted":
            self._compacted(payload, line)
        elif kind == "response_item":
            self._item(payload, line)

    def _item(self, payload: dict, line: int) -> None:
        if codex.is_reply_item(payload):
            if not self.run_open:
                self.run_open, self.runs_seen, self.run_start = True, True, self.tally.total
        else:
            self.run_open = False
        message = codex.item_message(payload)
        if message is None:
            return
        tokens, parsed = self.estimate(openai.parse_message, message, line)
        if parsed is not None and parsed.is_human_turn and message.get("role") == "user":
            self.tally.human_turn()
        self.tally.added(tokens)

    def _usage(self, info: object) -> None:
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            return
        total = info.get("total_token_usage")
        if total is not None and total == self.last_total:
            return  # the same event again, after a turn context
        self.last_total = total
        last = info["last_token_usage"]
        prompt = last.get("input_tokens")
        if not isinstance(prompt, int) or prompt <= 0:
            return  # nothing was sent (Codex writes one at a compaction)
        if self.after is None:
            self.after = self.runs_seen
        window = info.get("model_context_window")
        if isinstance(window, int) and window > 0:
            self.tally.window = window
        since = self.tally.total - self.run_start if self.after and self.runs_seen else 0
        reasoning = last.get("reasoning_output_tokens")
        self.tally.reported(prompt, since=max(since, 0), reasoning=reasoning if isinstance(reasoning, int) else 0)

    def _compacted(self, payload: dict, line: int) -> None:
        self.tally.compacted()
        self.tally.added(self.system)
        self.run_open, self.runs_seen = False, False
        history = payload.get("replacement_history")
        items = [i for i in history if isinstance(i, dict)] if isinstance(history, list) else []
        if not items and isinstance(payload.get("message"), str) and payload["message"]:
            items = [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": payload["message"]}]}
            ]
        for item in items:
            message = codex.item_message(item)
            if message is not None:
                self.tally.added(self.estimate(openai.parse_message, message, line)[0])


#: The formats followed record by record; any other log is re-read whole when it changes.
HANDLERS: dict[str, type[Records]] = {claude_code.NAME: ClaudeCodeRecords, codex_agent.NAME: CodexRecords}
