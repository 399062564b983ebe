"""aider chat histories (`.aider.chat.history.md`, in the project folder): markdown, not JSON.

aider appends to it as it goes (`aider/io.py`): `# aider chat started at <time>` when it starts;
each line the user typed as `#### <line>` followed by two spaces (`user_input`); the model's
reply as plain text (`ai_output`: the reply stripped, between blank lines); everything aider
itself prints (confirmations, the model in use, `Tokens: N sent, M received.`, commits) as
`> <text>` followed by two spaces (`tool_output`, `tool_error`, `confirm_ask`). The two trailing
spaces are what tell a user line or an aider line from a reply that happens to hold `####` or
`>` markdown.

What is read, as aider sends it (`aider/coders/base_coder.py`):

- **Each start of aider is a new conversation** (aider does not send an earlier run's chat unless
  asked to restore it), and so is `/clear` or `/reset`: one transcript each.
- **User turns**: the lines typed, joined. `/ask`, `/code`, `/architect` and `/context` send the
  text after the command; other commands (`/add`, `/run`, `/undo`, ...) are aider's own, not sent.
- **Replies**: each run of reply text is one assistant message; text after aider's own lines with
  no user turn between is another reply (aider re-prompts itself, e.g. to fix lint errors, with a
  message the history does not hold).
- **Commits**: after an edit aider commits (`> Commit <hash> <message>`) and adds to the chat the
  user message `I committed the changes with git hash <hash> & commit msg: <message>` and the
  reply `Ok.` (`move_back_cur_messages`): both are read, since every later request carries them,
  but no model call made that reply, so no request is made before it (`model.WRITTEN_BY_AGENT`).
- **Calls**: each `> Tokens: N sent, M received.` line is the call that made the reply before it:
  N is its prompt as aider reports it (cache writes included), M its output. aider rounds them:
  below 1,000 exact, below 10,000 to a hundred (`2.4k`), above to a thousand (`12k`).
- **Model**: `> Model: <name> ...` (or `Main model:`) at the start names the model of the calls.

The system prompt, repository map and file contents aider adds are not in the history (their
size is inferred from the recorded usage). Sent as OpenAI Chat Completions (`openai`), as aider
does through LiteLLM.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

from ..agents.aider import FILE_NAME, HEADER, NAME  # noqa: F401 (re-exported)
from ..core.model import WRITTEN_BY_AGENT, Message, RecordedCall, Role, Transcript
from ..errors import BadInput, NoConversation
from .common import Where, dumps
from .openai import parse_message
from .reading import Record, lines_of

FORMAT = NAME
#: What aider adds to the chat after committing an edit (`files_content_gpt_edits`).
COMMITTED = "I committed the changes with git hash {hash} & commit msg: {message}"
ACKNOWLEDGED = "Ok."
#: Commands whose text aider sends as the user's message; the other commands are not sent.
SENDING_COMMANDS = ("/ask", "/code", "/architect", "/context")
CLEARING_COMMANDS = ("/clear", "/reset")

_TOKENS = re.compile(
    r"Tokens: ([\d.]+[kM]?) sent(?:, [\d.]+[kM]? cache write)?(?:, [\d.]+[kM]? cache hit)?"
    r", ([\d.]+[kM]?) received"
)
_MODEL = re.compile(r"(?:Main model|Model): (\S+)")
_COMMIT = re.compile(r"Commit ([0-9a-f]{7,40}) (.+)")


def aider_count(text: str) -> int:
    """A token count as aider prints it (`format_tokens`).

    >>> aider_count("104"), aider_count("2.4k"), aider_count("12k"), aider_count("1.2M")
    (104, 2400, 12000, 1200000)
    """
    scale = {"k": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return round(float(text.rstrip("kM")) * scale)


def read(name: str, stream: BinaryIO) -> Iterator[Transcript]:
    """One transcript per conversation of the history."""
    builder = _Builder(name)
    for number, line in _lines(name, stream, builder.open_end):
        yield from builder.add(number, line)
    yield from builder.finish()
    if not builder.found:
        raise NoConversation(name, None, "has no conversation: no line typed by the user (`#### ...`)")


def records(name: str, stream: BinaryIO) -> Iterator[Record]:
    """The history's lines as records (their text as the value), for what describes a session."""
    for number, line in _lines(name, stream, []):
        yield Record(number, line, b"")


def _lines(name: str, stream: BinaryIO, open_end: list[str]) -> Iterator[tuple[int, str]]:
    """The lines of the history, but a last line that does not end with a line break: aider
    writes whole lines, so that one is being written (half a user line would read as a reply)."""
    held: tuple[int, bytes] | None = None
    for number, raw in enumerate(lines_of(stream), start=1):
        if held is not None:
            yield _decoded(name, *held)
        held = (number, raw)
    if held is not None and not held[1].endswith(b"\n") and held[1].strip():
        open_end.append(f"its last line ({held[0]}) is cut short")
    elif held is not None:
        yield _decoded(name, *held)


def _decoded(name: str, number: int, raw: bytes) -> tuple[int, str]:
    if b"\x00" in raw:
        raise BadInput(name, number, "contains a NUL byte: this is not an aider chat history")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInput(name, number, f"invalid UTF-8 at byte {error.start + 1}") from None
    return number, text.removeprefix("\ufeff").rstrip("\r\n")


def is_user_line(line: str) -> bool:
    return line.startswith("#### ") and line.endswith("  ")


def is_aider_line(line: str) -> bool:
    return line.startswith("> ") and line.endswith("  ")


class _Builder:
    """The conversation being read: its messages, its calls, and the lines of the open turn."""

    def __init__(self, name: str) -> None:
        self.name, self.found, self.model = name, False, ""
        self.done: list[Transcript] = []  # conversations complete, not yet handed out
        #: Why the history looks still being written (shared by all its conversations).
        self.open_end: list[str] = []
        self._start(1)

    def _start(self, line: int) -> None:
        self.line = line
        self.messages: list[Message] = []
        self.calls: list[RecordedCall] = []
        self.typed: list[str] = []  # the user lines of the turn being read
        self.typed_at = 0
        self.reply: list[str] = []  # the reply lines being read
        self.reply_at = 0
        self.called = True  # whether the last reply already has its call

    def add(self, number: int, line: str) -> Iterator[Transcript]:
        if line.startswith(HEADER):  # aider started again: a new chat, maybe another model
            self._end()
            self._start(number)
            self.model = ""
        elif is_user_line(line):
            self._close_reply()
            if not self.typed:
                self.typed_at = number
            self.typed.append(line[5:-2])
        elif is_aider_line(line):
            self._close_turn()
            self._aider(number, line[2:].strip())
        elif self.typed and not line.strip():
            self._close_turn()  # the blank line aider writes before each input ends the one before
        else:
            self._close_turn()
            if line.strip() or self.reply:
                self.reply_at = self.reply_at or number
                self.reply.append(line)
        yield from self.done
        self.done.clear()

    def _aider(self, number: int, text: str) -> None:
        self._close_reply()
        if (model := _MODEL.match(text)) and not self.model:
            self.model = model[1]
        elif (tokens := _TOKENS.match(text)) and not self.called:
            self.calls[-1] = self.calls[-1]._replace(
                prompt_tokens=aider_count(tokens[1]), output_tokens=aider_count(tokens[2])
            )
            self.called = True
        elif (commit := _COMMIT.match(text)) and self.messages and self.messages[-1].role is Role.ASSISTANT:
            self._append("user", COMMITTED.format(hash=commit[1], message=commit[2]), number)
            self._append("assistant", ACKNOWLEDGED, number)
            self.messages[-1].memo[WRITTEN_BY_AGENT] = True  # aider's, not the model's: no call made it

    def _close_turn(self) -> None:
        """The user lines read so far, as the message aider sends (if it sends one)."""
        if not self.typed:
            return
        text, at = "\n".join(self.typed), self.typed_at
        self.typed = []
        if text.strip() == "<blank>":
            return
        if text.startswith("/"):
            command, _, rest = text.partition(" ")
            if command in CLEARING_COMMANDS:  # the chat so far is no longer sent
                self._end()
                self._start(at)
                return
            if command not in SENDING_COMMANDS or not rest.strip():
                return
            text = rest
        self._append("user", text, at)

    def _close_reply(self) -> None:
        while self.reply and not self.reply[-1].strip():
            self.reply.pop()
        if not self.reply:
            return
        text, at = "\n".join(self.reply).strip(), self.reply_at
        self.reply, self.reply_at = [], 0
        if not self.messages:
            return  # text before anything was asked: not a reply
        self._append("assistant", text, at)
        self.calls.append(RecordedCall(len(self.messages) - 1, model=self.model))
        self.called = False

    def _append(self, role: str, text: str, line: int) -> None:
        value = {"role": role, "content": text}
        self.messages.append(parse_message(value, dumps(value), Where(self.name, line)))

    def _end(self) -> None:
        """The conversation read so far is complete (if it holds anything the user sent)."""
        self._close_turn()
        self._close_reply()
        if any(m.role is Role.USER for m in self.messages):
            self.found = True
            calls = [c._replace(model=c.model or self.model) for c in self.calls]
            self.done.append(
                Transcript(
                    self.name,
                    FORMAT,
                    "openai",
                    tuple(self.messages),
                    line=self.line,
                    calls=calls,
                    open_end=self.open_end,
                )
            )
        self.messages, self.calls = [], []

    def finish(self) -> Iterator[Transcript]:
        self._end()
        yield from self.done
        self.done.clear()
