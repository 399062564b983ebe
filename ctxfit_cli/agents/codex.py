"""Codex CLI (OpenAI's coding agent): its rollout files, `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.

- **Recognised** by a record `{"timestamp", "type", "payload"}` of a type it writes (`ITEM_TYPES`).
- **Folders**: `$CODEX_HOME/sessions`; otherwise `~/.codex/sessions`.
- **Read** by `formats/codex.py` (its dialect: response items into OpenAI Chat Completions) and
  `formats/codex_transcripts.py` (one transcript per compaction, its `token_count` events the calls).
- **Session**: `session_meta.payload.id`, project `cwd`, models `turn_context.model`, dates
  `timestamp`; compactions are `compacted` records.
- **Billed**: each `token_count` event's `last_token_usage` (`spend.py`).
- **Compacts** (`model_family.rs`, `default_auto_compact_limit`) at 90% of the model's window,
  unless `model_auto_compact_token_limit` is configured.
- **Wrap** (0.171.0): the config key `openai_base_url` (`codex -c openai_base_url="…"`); it no
  longer reads `OPENAI_BASE_URL`, which older versions read for their built-in `openai` provider
  (codex-rs `model_provider_info.rs`), so wrap sets both: the variable is harmless to 0.171. With
  an API key Codex posts to `{it}/responses`, `{it}` ending in `/v1`. Signed in with ChatGPT
  (`$CODEX_HOME/auth.json`, `auth_mode`) it talks to `chatgpt.com/backend-api/codex`, and the
  same key overrides that: wrap points it at the proxy's root and forwards to the backend. Signed
  in so, Codex also compresses its request bodies (zstd, its `enable_request_compression`
  feature), which ctxfit cannot fit: wrap turns that feature off for the run
  (`-c features.enable_request_compression=false`). A user's own gateway may be configured as
  `openai_base_url` in `$CODEX_HOME/config.toml`: wrap forwards to it.

>>> AGENT.compaction_at(272_000)
244800
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .agent import Agent
from .session import SessionMeta, member
from .spend import Spend
from .wrap import Wrap

if TYPE_CHECKING:
    from ..core.model import Transcript
    from ..formats.reading import Record
    from ..formats.skipped import Skipped

NAME = "codex"
TITLE = "Codex"
LOOKS_LIKE = "a Codex CLI rollout (~/.codex/sessions/**/rollout-*.jsonl)"
HOME_VARIABLE = "CODEX_HOME"
#: The record types of a rollout.
ITEM_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
SHARE = 0.9


def recognise(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") in ITEM_TYPES and "payload" in value


def home_folder(environ: Mapping[str, str]) -> Path:
    """Codex's own folder: `$CODEX_HOME`, else `~/.codex`."""
    if environ.get(HOME_VARIABLE):
        return Path(environ[HOME_VARIABLE]).expanduser()
    return Path(environ.get("HOME") or Path.home()) / ".codex"


def folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    return [home_folder({**environ, "HOME": str(home)}) / "sessions"]


def compaction_at(window: int) -> int:
    return int(window * SHARE)


def billed(spend: Spend, value: object) -> None:
    """One record's billed usage: the model of a `turn_context`, the usage of a `token_count` event."""
    if not isinstance(value, dict):
        return
    kind = value.get("type")
    payload = member(value, "payload")
    if kind == "turn_context":
        spend.codex_model(payload.get("model"))
    elif kind == "event_msg" and payload.get("type") == "token_count":
        spend.codex_usage(payload.get("info"))


def describe(path: str, records: Iterable[Record]) -> list[SessionMeta]:
    session = SessionMeta("", TITLE)
    spend = Spend()
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            continue
        session.saw(value.get("timestamp"))
        payload = member(value, "payload")
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


def read(name: str, records: Iterator[Record], skipped: Skipped) -> Iterator[Transcript]:
    from ..formats.codex_transcripts import transcripts

    return transcripts(name, records, skipped)


def signed_in_with_chatgpt(environ: Mapping[str, str]) -> bool:
    """Whether Codex uses a ChatGPT login ($CODEX_HOME/auth.json, default ~/.codex): its
    `auth_mode`, or, in files from before it was written, tokens and no API key."""
    auth = _json_object(home_folder(environ) / "auth.json")
    if auth is None:
        return False  # no login saved: an API key, if anything
    mode = auth.get("auth_mode")
    if isinstance(mode, str):
        return mode.lower().startswith("chatgpt")
    return bool(auth.get("tokens")) and not auth.get("OPENAI_API_KEY")


def configured_base(environ: Mapping[str, str]) -> str:
    """The `openai_base_url` of Codex's own config.toml (a user's gateway), or ""."""
    import tomllib

    try:
        text = (home_folder(environ) / "config.toml").read_text(encoding="utf-8")
        value = tomllib.loads(text).get("openai_base_url")
    except (OSError, ValueError):
        return ""
    return value if isinstance(value, str) else ""


def _json_object(path: Path) -> dict | None:
    """The JSON object a settings file holds; None when there is none to read."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _signed_in(environ: Mapping[str, str]) -> Wrap | None:
    return WITH_CHATGPT if signed_in_with_chatgpt(environ) else None


_BASE_URL = ("-c", 'openai_base_url="{url}"')
#: Signed in with ChatGPT: the ChatGPT backend behind the same key, bodies uncompressed.
WITH_CHATGPT = Wrap(
    "codex",
    "OPENAI_BASE_URL",
    "https://chatgpt.com/backend-api/codex",
    options=(*_BASE_URL, "-c", "features.enable_request_compression=false"),
    configured_base=configured_base,
    says="codex is signed in with ChatGPT (its auth.json): its requests are fitted on their way to {target}",
)
WRAP = Wrap(
    "codex",
    "OPENAI_BASE_URL",
    "https://api.openai.com",
    "/v1",
    options=_BASE_URL,
    signed_in=_signed_in,
    configured_base=configured_base,
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
    variables=(HOME_VARIABLE,),
    where="~/.codex/sessions or $CODEX_HOME/sessions",
    billed=billed,
    streamed=True,
    short="codex",
    wrap=WRAP,
)
