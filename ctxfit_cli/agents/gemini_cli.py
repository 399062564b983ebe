"""Gemini CLI (Google's coding agent): its chat recordings, `~/.gemini/tmp/<project>/chats/session-*.json` or `.jsonl`.

- **Recognised** by its metadata (`sessionId` and `projectHash`), the first line of a JSON
  Lines recording or the whole document of an older one.
- **Folders**: `$GEMINI_CLI_HOME/.gemini/tmp/*/chats` (the variable replaces the home folder, as
  Gemini CLI's `homedir()` does); otherwise `~/.gemini/tmp/*/chats`. Only the chats:
  `tmp/<project>/` also holds logs.json, checkpoints and tool output.
- **Read** by `formats/gemini_cli.py` into Gemini contents. A JSON recording is rewritten whole
  as the agent runs (read up to its last complete message when cut short).
- **Session**: `sessionId`, project `directories[0]`, else the folder holding `chats/` (a
  sub-agent's one folder deeper); models: gemini messages' `model`; dates: messages' `timestamp`;
  cost: each reply's `tokens` (cached input a cache read, thoughts billed as output; a reply
  recorded again counts once).
- **Compacts** (`chatCompressionService.ts`) at `DEFAULT_COMPRESSION_TOKEN_THRESHOLD` = 0.5 of
  the model's token limit (it was 0.7 and 0.95 in earlier versions).
- **Wrap** (0.61.0): `GOOGLE_GEMINI_BASE_URL`, read with an API key (`gemini-api-key`,
  `GEMINI_API_KEY`). With no way to sign in selected in its settings, that variable alone makes it
  pick its `gateway` auth type (`getAuthTypeFromEnv`), which its own check then refuses
  ("Invalid auth method selected.", exit 41, `validateAuthMethod` knows no `gateway`). So wrap
  selects `gemini-api-key` in a system-defaults file of its own (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`,
  the lowest of Gemini CLI's settings: any way to sign in the user selected wins; the user's own
  defaults file is merged in). Signed in with Google (`oauth-personal`,
  …, in `security.auth.selectedType` or the older `selectedAuthType` of `~/.gemini/settings.json`
  or the project's `.gemini/settings.json`), it talks to Google's Code Assist API instead, at
  `CODE_ASSIST_ENDPOINT` when that is set (`code_assist/server.ts`).

>>> AGENT.compaction_at(1_000_000)
500000
>>> AGENT.project_folder(PurePath("/h/.gemini/tmp/web/chats/session-1.json"))
'web'
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta
from .spend import Spend, count
from .wrap import Wrap

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "gemini-cli"
TITLE = "Gemini CLI"
LOOKS_LIKE = "a Gemini CLI chat recording (chats/session-*.json or .jsonl)"
HOME_VARIABLE = "GEMINI_CLI_HOME"
SHARE = 0.5
#: Gemini CLI's ways to sign in that talk to Code Assist (`selectedType` in its settings).
GOOGLE_SIGN_INS = ("oauth-personal", "cloud-shell", "compute-default-credentials")
DEFAULTS_VARIABLE = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"


def recognise(value: object) -> bool:
    """Whether a record is a Gemini CLI recording's metadata (or the whole document)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("sessionId"), str)
        and isinstance(value.get("projectHash"), str)
    )


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    gemini_home = Path(environ[HOME_VARIABLE]).expanduser() if environ.get(HOME_VARIABLE) else home
    return sorted((gemini_home / ".gemini" / "tmp").glob("*/chats"))


def compaction_at(window: int) -> int:
    return int(window * SHARE)


def project_folder(path: PurePath) -> str:
    """Gemini CLI keeps a project's chats in `<project>/chats/` (a sub-agent's one folder deeper)."""
    parts = path.parent.parts
    if "chats" in parts[1:]:
        return parts[len(parts) - 1 - parts[::-1].index("chats") - 1]
    return path.parent.name


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    from ..formats.gemini_cli import recording

    metadata, messages = recording(records)
    session = SessionMeta(str(metadata.get("sessionId") or ""), TITLE)
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
            _tokens(spend, message)
    session.spend = spend.totals()
    return [session]


def _tokens(spend: Spend, message: dict) -> None:
    """A Gemini CLI reply's `tokens` (its `usageMetadata`): cached input is a cache read, the
    rest of the prompt (tool-use prompts with it) uncached input, thoughts are billed as output.
    A reply recorded again as it streams counts once, as last recorded."""
    tokens = message.get("tokens")
    if not isinstance(tokens, dict):
        return
    counted = {k: count(v) for k, v in tokens.items()}
    cached = min(counted.get("cached", 0), counted.get("input", 0))
    uncached = counted.get("input", 0) - cached + counted.get("tool", 0)
    output = counted.get("output", 0) + counted.get("thoughts", 0)
    model = message.get("model")
    spend.call(model if isinstance(model, str) else "", uncached, 0, cached, output, reply=str(message.get("id") or ""))


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.gemini_cli import read

    return read(name, records, skipped)


def signed_in_with_google(environ: Mapping[str, str], project: Path | None = None) -> bool:
    """Whether Gemini CLI talks to Code Assist: the way to sign in its settings select (the
    project's over the user's), or `GOOGLE_GENAI_USE_GCA=true`. With none selected, the base-URL
    variable wrap sets makes Gemini CLI 0.61 pick its `gateway` auth type: not Code Assist."""
    if environ.get("GOOGLE_GENAI_USE_GCA") == "true":
        return True
    home = Path(environ.get("HOME") or Path.home())
    selected = None
    for settings in (home / ".gemini" / "settings.json", (project or Path.cwd()) / ".gemini" / "settings.json"):
        selected = _selected_sign_in(settings) or selected
    return selected in GOOGLE_SIGN_INS


def api_key_selected(environ: Mapping[str, str], folder: Path) -> dict[str, str]:
    """Gemini CLI with no way to sign in selected gets API-key auth selected in its lowest
    settings: a system-defaults file of wrap's own (in `folder`), the user's merged in."""
    defaults_path = Path(environ.get(DEFAULTS_VARIABLE) or "/etc/gemini-cli/system-defaults.json")
    defaults = _json_object(defaults_path) or {}
    security = defaults.setdefault("security", {}) if isinstance(defaults.get("security", {}), dict) else {}
    auth = security.setdefault("auth", {}) if isinstance(security.get("auth", {}), dict) else {}
    auth.setdefault("selectedType", "gemini-api-key")
    path = _private(folder) / "gemini-system-defaults.json"
    staged = path.with_name(f"{path.name}.{os.getpid()}")
    staged.write_text(json.dumps(defaults, indent=2), encoding="utf-8")
    staged.replace(path)  # (another wrap may be reading it: replaced whole)
    return {DEFAULTS_VARIABLE: str(path)}


def _private(folder: Path) -> Path:
    """`folder`, or, when any folder above it may be written by others (a HOME under /tmp),
    the state folder under the account's own home: Gemini CLI ignores a settings file there
    ("Parent directory '/tmp' is insecure")."""
    if not any(part.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH) for part in (folder, *folder.parents)):
        return folder
    import pwd  # (POSIX: where folder modes mean this)

    own = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".local" / "state" / "ctxfit"
    own.mkdir(parents=True, exist_ok=True)
    return own


def _selected_sign_in(path: Path) -> str | None:
    settings = _json_object(path)
    if settings is None:
        return None
    auth = settings.get("security", {}).get("auth", {}) if isinstance(settings.get("security"), dict) else {}
    selected = (auth.get("selectedType") if isinstance(auth, dict) else None) or settings.get("selectedAuthType")
    return selected if isinstance(selected, str) else None


def _json_object(path: Path) -> dict | None:
    """The JSON object a settings file holds; None when there is none to read."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _signed_in(environ: Mapping[str, str]) -> Wrap | None:
    return WITH_GOOGLE if signed_in_with_google(environ) else None


#: Signed in with Google: Google's Code Assist API, at the endpoint the variable names.
WITH_GOOGLE = Wrap(
    "gemini",
    "CODE_ASSIST_ENDPOINT",
    "https://cloudcode-pa.googleapis.com",
    says="gemini is signed in with Google: its requests to Code Assist are fitted on their way to {target}",
)
WRAP = Wrap(
    "gemini",
    "GOOGLE_GEMINI_BASE_URL",
    "https://generativelanguage.googleapis.com",
    key="GEMINI_API_KEY",
    signed_in=_signed_in,
    environment=api_key_selected,
)

AGENT = Agent(
    name=NAME,
    title=TITLE,
    looks_like=LOOKS_LIKE,
    recognise=recognise,
    describe=describe,
    read=read,
    folders=folders,
    compaction_at=compaction_at,
    document=True,
    variables=(HOME_VARIABLE,),
    where="~/.gemini/tmp/*/chats or $GEMINI_CLI_HOME/.gemini/tmp/*/chats",
    project_folder=project_folder,
    wrap=WRAP,
)
