"""SWE-agent trajectories (`*.traj`): one JSON document per run.

A trajectory is `{"environment", "trajectory": [steps], "history": [messages], "info": {...},
"replay_config"?}`. `history` is what the model was sent, in OpenAI Chat Completions shape with
SWE-agent's own fields beside it (`agent`, `message_type`, `thought`, `action`, `is_demo`). It is
read as SWE-agent itself sends it (`sweagent/agent/models.py`, `_history_to_messages`):

- only `role`, `content` and an assistant's `tool_calls` are sent; the other fields are the
  agent's bookkeeping and are not counted;
- a `role: "tool"` message names its call in `tool_call_ids` (a list; SWE-agent sends the first
  as `tool_call_id`): each id becomes one tool message, the content on the first;
- demonstrations (`is_demo: true`) are sent to the model, so they are kept and counted (but no
  call of the run made a demonstration's assistant messages: no request is made before them);
- older trajectories (no function calling) have the actions in the assistant's text and the
  observations as user messages: they read as a plain chat.

The system prompt (the leading `system` messages) becomes the transcript's system prompt. Each
assistant message not from a demonstration is one recorded model call; a trajectory records no per-call usage (only
`info.model_stats` totals), so `prompt_tokens` is unknown. The model is read from
`replay_config` (`agent.model.name`) when the trajectory has one.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..agents.swe_agent import NAME, model_name  # noqa: F401 (re-exported)
from ..core.model import WRITTEN_BY_AGENT, Message, RecordedCall, Role, Transcript
from ..core.repair import repair
from .common import Where, dumps, expect_dict, type_name
from .openai import parse_message
from .reading import Record
from .repair_writers import WRITERS

FORMAT = NAME


def read(name: str, records: Iterator[Record]) -> Iterator[Transcript]:
    """The transcript of each trajectory in the input (one per document or per line)."""
    for record in records:
        yield transcript(name, record)


def transcript(name: str, record: Record) -> Transcript:
    where = Where(name, record.line)
    trajectory = expect_dict(record.value, where, "a SWE-agent trajectory")
    history = trajectory.get("history")
    if not isinstance(history, list):
        raise where.fail(f'a SWE-agent trajectory needs a "history" list, got {type_name(history)}')
    model = model_name(trajectory)
    system: list[Message] = []
    messages: list[Message] = []
    calls: set[int] = set()  # id() of the messages a call of this run made
    for i, item in enumerate(history):
        at = where.at("history").at(i)
        for sent in _as_sent(expect_dict(item, at, "a history entry"), at):
            message = parse_message(sent, dumps(sent), at)
            if message.role is Role.SYSTEM and not messages:
                system.append(message)
                continue
            if message.role is Role.ASSISTANT and item.get("is_demo"):
                message.memo[WRITTEN_BY_AGENT] = True  # a demonstration: sent, but no call of this run made it
            elif message.role is Role.ASSISTANT:
                calls.add(id(message))
            messages.append(message)
    result = Transcript(name, FORMAT, "openai", (), tuple(system), line=record.line)
    # (a trajectory being written ends with the call its tool is running: answered, reported)
    result.messages = tuple(repair(messages, WRITERS["openai"], name, result.repairs, result.open_end))
    result.calls = [RecordedCall(k, model=model) for k, m in enumerate(result.messages) if id(m) in calls]
    return result


def _as_sent(item: dict, where: Where) -> list[dict]:
    """The message(s) SWE-agent sends for one history entry."""
    role = item.get("role")
    content = item.get("content")
    if role == "tool":
        ids = item.get("tool_call_ids") or ([item["tool_call_id"]] if item.get("tool_call_id") else [])
        if not isinstance(ids, list) or not ids:
            raise where.fail('a "tool" entry needs "tool_call_ids"')
        return [
            {"role": "tool", "tool_call_id": str(call_id), "content": content if k == 0 else ""}
            for k, call_id in enumerate(ids)
        ]
    sent = {"role": role, "content": content}
    if role == "assistant" and item.get("tool_calls"):
        sent["tool_calls"] = item["tool_calls"]
    return [sent]
