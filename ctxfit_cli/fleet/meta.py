"""What a log says about its session beside the conversation: id, project, agent, models, dates,
compactions, and the ids that tell a copied session from a new one.

Read from the records the agents write (plain data, no messages built):

| format      | id                         | project            | models                  | dates        |
|-------------|----------------------------|--------------------|-------------------------|--------------|
| claude-code | `sessionId` (+ `agentId` of a sub-agent's log) | `cwd` | `message.model` | `timestamp` |
| codex       | `session_meta.payload.id`  | `cwd`              | `turn_context.model`    | `timestamp`  |
| openhands   | `instance_id` (evaluation output) | `instance.repo` | `llm_config.model`, responses' `model` | events' `timestamp` |
| swe-agent   | `replay_config.problem_statement.id` + the file's digest | `environment` | `replay_config.agent.model.name` | none in the file |
| cline       | the task folder's name (Cline's task id) | `# Current Working Directory` of the first prompt | `modelInfo.modelId` | `ts` |
| aider       | `aider@` + the start time of each run | the history's folder | `> Model:` | `# aider chat started at` |
| opencode    | the session's `id`        | `directory`        | its calls' models       | `time.created`, `time.updated` |
| gemini-cli  | `sessionId`                | `directories[0]`, else the folder holding `chats/` | gemini messages' `model` | messages' `timestamp` |

A log without an id is given one by the caller (a digest of its bytes, so that an exact copy is
still recognised), and so is a log whose id names its task rather than the run (`unique` false:
a SWE-agent trajectory names the instance it worked on, which every run of it shares).
"""  # noqa: E501 (markdown table rows cannot be wrapped)

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePath

import orjson

from ..agents import BY_NAME, cline_ui
from ..agents.session import SessionMeta, from_epoch_ms, utc  # noqa: F401 (re-exported)
from ..formats.common import json_object
from ..formats.reading import Record
from .spend import Spend

AGENTS = {
    "claude-code": "Claude Code",
    "codex": "Codex",
    "openhands": "OpenHands",
    "swe-agent": "SWE-agent",
    "cline": "Cline",
    "aider": "aider",
    "opencode": "OpenCode",
    "gemini-cli": "Gemini CLI",
}


def agent_title(format: str) -> str:
    """The name of the agent that writes logs of `format` (the format's name if none does)."""
    agent = BY_NAME.get(format)
    return agent.title if agent is not None else AGENTS.get(format, format)


def describe(path: str, format: str, records: Iterable[Record]) -> list[SessionMeta]:
    """The sessions of one input; `id` is "" where the log names none.

    >>> [s] = describe("runs/x.traj", "swe-agent", [Record(1, {"history": []}, b"")])
    >>> s.agent, s.id, s.project
    ('SWE-agent', '', 'runs')
    """
    agent = BY_NAME.get(format)
    reader = _READERS.get(format)
    sessions = agent.describe(path, records) if agent else reader(records) if reader else []
    if not sessions:
        sessions = [SessionMeta("", agent.title if agent else AGENTS.get(format, format))]
    for session in sessions:
        if not session.project and path not in ("-", "<stdin>"):
            session.project = _project_folder(PurePath(path), format)
        if format == "cline":
            _cline_task(session, path)
    return sessions


def _project_folder(path: PurePath, format: str) -> str:
    """The folder that names a log's project: its own, but for Gemini CLI, which keeps a
    project's chats in `<project>/chats/` (a sub-agent's one folder deeper).

    >>> _project_folder(PurePath("/h/.gemini/tmp/web/chats/session-1.json"), "gemini-cli")
    'web'
    """
    parts = path.parent.parts
    if format == "gemini-cli" and "chats" in parts[1:]:
        return parts[len(parts) - 1 - parts[::-1].index("chats") - 1]
    return path.parent.name


def _claude_code(records: Iterable[Record]) -> list[SessionMeta]:
    session = SessionMeta("", AGENTS["claude-code"])
    spend = Spend()
    inline: dict[str, Spend] = {}  # each sub-agent's replies written inline, by its id
    sidechain = None
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            continue
        session.saw(value.get("timestamp"))
        kind = value.get("type")
        if kind == "system" and value.get("subtype") == "compact_boundary":
            session.compactions += 1
        if kind == "progress":  # a sub-agent's traffic written inline: its usage is the session's cost
            spend.claude_code_subagent(value)
            data = value.get("data")
            agent = data.get("agentId") if isinstance(data, dict) else None
            if isinstance(agent, str) and agent:
                inline.setdefault(agent, Spend()).claude_code_subagent(value)
        if kind not in ("user", "assistant"):
            continue
        if sidechain is None:
            sidechain = bool(value.get("isSidechain"))
            agent_id = value.get("agentId") if sidechain else None
            session.id = str(value.get("sessionId") or "") + (f"/{agent_id}" if agent_id else "")
            session.project = str(value.get("cwd") or "")
        message = value.get("message")
        if kind == "assistant" and isinstance(message, dict):
            spend.claude_code(value)
            session.model(message.get("model"))
            reply = message.get("id")
            if isinstance(reply, str) and (not session.message_ids or session.message_ids[-1] != reply):
                session.message_ids.append(reply)
    session.spend = spend.totals()
    session.inline_agents = {agent: replies.totals() for agent, replies in inline.items()}
    for model, _ in session.spend:  # (a sub-agent's, or a model's fast mode: its cost is grouped by it)
        session.model(model)
    return [session]


def _codex(records: Iterable[Record]) -> list[SessionMeta]:
    session = SessionMeta("", AGENTS["codex"])
    spend = Spend()
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            continue
        session.saw(value.get("timestamp"))
        payload = json_object(value, "payload")
        kind = value.get("type")
        if kind == "session_meta" and not session.id:
            session.id = str(payload.get("id") or "")
            session.project = str(payload.get("cwd") or "")
        elif kind == "turn_context":
            session.model(payload.get("model"))
            spend.codex_model(payload.get("model"))
        elif kind == "event_msg" and payload.get("type") == "token_count":
            spend.codex_usage(payload.get("info"))
        elif kind == "compacted":
            session.compactions += 1
        elif kind == "response_item" and isinstance(payload.get("id"), str):
            session.message_ids.append(payload["id"])
    session.spend = spend.totals()
    return [session]


def _openhands(records: Iterable[Record]) -> list[SessionMeta]:
    sessions = []
    for record in records:
        value = record.value
        events = value if isinstance(value, list) else value.get("history") if isinstance(value, dict) else None
        if not isinstance(events, list):
            continue
        session = SessionMeta("", AGENTS["openhands"], line=record.line)
        if isinstance(value, dict):
            metadata = json_object(value, "metadata")
            config = json_object(metadata, "llm_config")
            instance = json_object(value, "instance")
            run = metadata.get("start_time")
            session.id = str(value.get("instance_id") or "") + (f"@{run}" if run and value.get("instance_id") else "")
            session.project = str(instance.get("repo") or metadata.get("dataset") or "")
            session.model(config.get("model"))
        for event in events:
            if not isinstance(event, dict):
                continue
            session.saw(event.get("timestamp"))
            if event.get("action") == "condensation":
                session.compactions += 1
            response = (
                (event.get("tool_call_metadata") or {}).get("model_response")
                if isinstance(event.get("tool_call_metadata"), dict)
                else None
            )
            if isinstance(response, dict) and "action" in event:
                session.model(response.get("model"))
                reply = response.get("id")
                if isinstance(reply, str) and reply not in session.message_ids[-1:]:
                    session.message_ids.append(reply)
        sessions.append(session)
    return sessions


def _swe_agent(records: Iterable[Record]) -> list[SessionMeta]:
    from ..formats.swe_agent import model_name

    sessions = []
    for record in records:
        value = record.value if isinstance(record.value, dict) else {}
        session = SessionMeta("", AGENTS["swe-agent"], line=0)
        config = value.get("replay_config")
        try:
            config = orjson.loads(config) if isinstance(config, str) else config
        except orjson.JSONDecodeError:
            config = None
        problem = config.get("problem_statement") if isinstance(config, dict) else None
        if isinstance(problem, dict) and problem.get("id"):
            session.id = str(problem["id"])
        session.unique = False  # every run of this instance has the same id
        session.model(model_name(value))
        # SWE-bench instance ids are owner__repo-number.
        repo = re.fullmatch(r"(.+?)__(.+)-\d+", session.id)
        session.project = f"{repo[1]}/{repo[2]}" if repo else ""
        sessions.append(session)
    return sessions


def _cline(records: Iterable[Record]) -> list[SessionMeta]:
    session = SessionMeta("", AGENTS["cline"])
    for record in records:
        history = record.value if isinstance(record.value, list) else []
        for message in history:
            if not isinstance(message, dict):
                continue
            session.saw(from_epoch_ms(message.get("ts")))
            info = message.get("modelInfo")
            if isinstance(info, dict):
                session.model(info.get("modelId"))
            if not session.project and message.get("role") == "user":
                session.project = _working_directory(message.get("content"))
    return [session]


def _cline_task(session: SessionMeta, path: str) -> None:
    """Cline's task id is the name of the folder holding the history; its forks' are the same."""
    if path in ("-", "<stdin>"):
        return
    where = PurePath(path)
    session.id = session.id or where.parent.name
    session.agent = cline_ui.agent_of(path)  # Roo Code's and Kilo Code's folders: theirs


def _working_directory(content: object) -> str:
    """The folder Cline names in the environment details of a prompt."""
    blocks = content if isinstance(content, list) else [{"text": content}] if isinstance(content, str) else []
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) else None
        found = re.search(r"# Current Working Directory \((.+?)\)", text) if isinstance(text, str) else None
        if found:
            return found[1]
    return ""


def _aider(records: Iterable[Record]) -> list[SessionMeta]:
    from ..formats.aider import HEADER

    sessions: list[SessionMeta] = []
    for record in records:
        line = record.value if isinstance(record.value, str) else ""
        if line.startswith(HEADER):
            started = line[len(HEADER) :].strip()
            sessions.append(SessionMeta(f"aider@{started}", AGENTS["aider"], line=record.line))
            sessions[-1].saw(started.replace(" ", "T"))
        elif sessions and (model := re.match(r"> (?:Main model|Model): (\S+)", line)):
            sessions[-1].model(model[1])
    return sessions


def _opencode(records: Iterable[Record]) -> list[SessionMeta]:
    sessions = []
    for record in records:
        value = record.value if isinstance(record.value, dict) else {}
        session = SessionMeta(str(value.get("id") or ""), AGENTS["opencode"], str(value.get("directory") or ""))
        times = json_object(value, "time")
        for key in ("created", "updated"):
            session.saw(from_epoch_ms(times.get(key)))
        sessions.append(session)
    return sessions


def _gemini_cli(records: Iterable[Record]) -> list[SessionMeta]:
    from ..formats.gemini_cli import recording

    metadata, messages = recording(records)
    session = SessionMeta(str(metadata.get("sessionId") or ""), AGENTS["gemini-cli"])
    directories = metadata.get("directories")
    if isinstance(directories, list) and directories and isinstance(directories[0], str):
        session.project = directories[0]
    session.saw(metadata.get("startTime"))
    spend = Spend()
    for message, _ in messages:
        session.saw(message.get("timestamp"))
        if message.get("type") == "gemini":
            session.model(message.get("model"))
            session.message_ids.append(message["id"])
            _gemini_tokens(spend, message)
    session.spend = spend.totals()
    return [session]


def _gemini_tokens(spend: Spend, message: dict) -> None:
    """A Gemini CLI reply's `tokens` (its `usageMetadata`): cached input is a cache read, the
    rest of the prompt (tool-use prompts with it) uncached input, thoughts are billed as output.
    A reply recorded again as it streams counts once, as last recorded."""
    tokens = message.get("tokens")
    if not isinstance(tokens, dict):
        return
    count = {k: v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0 for k, v in tokens.items()}
    cached = min(count.get("cached", 0), count.get("input", 0))
    uncached = count.get("input", 0) - cached + count.get("tool", 0)
    output = count.get("output", 0) + count.get("thoughts", 0)
    model = message.get("model")
    spend.call(model if isinstance(model, str) else "", uncached, 0, cached, output, reply=str(message.get("id") or ""))


_READERS = {
    "claude-code": _claude_code,
    "codex": _codex,
    "openhands": _openhands,
    "swe-agent": _swe_agent,
    "cline": _cline,
    "aider": _aider,
    "opencode": _opencode,
    "gemini-cli": _gemini_cli,
}
