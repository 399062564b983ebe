"""The agents `ctxfit wrap` knows, and how each is pointed at the proxy: what it reads its API's
base URL from today (a variable, or a config option on its command line), and the provider
behind it, which depends on how it signs in.

Checked against each agent's own code, on the versions named (the agents ship weekly: wrap
also notices when an agent sent nothing through the proxy, `supervise.nothing_sent`):

- Claude Code (2.1.197, 2.1.337): `ANTHROPIC_BASE_URL`, with an API key or its own login.
- Codex CLI (0.171.0): the config key `openai_base_url` (`codex -c openai_base_url="…"`); it no
  longer reads `OPENAI_BASE_URL`, which older versions read for their built-in `openai` provider
  (codex-rs `model_provider_info.rs`), so wrap sets both: the variable is harmless to 0.171. With
  an API key Codex posts to `{it}/responses`, `{it}` ending in `/v1`. Signed in with ChatGPT
  (`$CODEX_HOME/auth.json`, `auth_mode`) it talks to `chatgpt.com/backend-api/codex`, and the
  same key overrides that: wrap points it at the proxy's root and forwards to the backend. Signed
  in so, Codex also compresses its request bodies (zstd, its `enable_request_compression`
  feature), which ctxfit cannot fit: wrap turns that feature off for the run
  (`-c features.enable_request_compression=false`).
- Gemini CLI (0.61.0): `GOOGLE_GEMINI_BASE_URL`, read with an API key (`gemini-api-key`,
  `GEMINI_API_KEY`). With no way to sign in selected in its settings, that variable alone makes it
  pick its `gateway` auth type (`getAuthTypeFromEnv`), which its own check then refuses
  ("Invalid auth method selected.", exit 41, `validateAuthMethod` knows no `gateway`). So wrap
  selects `gemini-api-key` in a system-defaults file of its own (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`,
  the lowest of Gemini CLI's settings: any way to sign in the user selected wins; the user's own
  defaults file is merged in). Signed in with Google (`oauth-personal`,
  …, in `security.auth.selectedType` or the older `selectedAuthType` of `~/.gemini/settings.json`
  or the project's `.gemini/settings.json`), it talks to Google's Code Assist API instead, at
  `CODE_ASSIST_ENDPOINT` when that is set (`code_assist/server.ts`).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Agent:
    command: str
    #: The variable the agent reads its API's base URL from (set for versions that still do).
    variable: str
    #: The provider it talks to when the variable is not set.
    upstream: str
    #: What follows the proxy's address in the variable (the OpenAI SDKs expect `/v1`).
    suffix: str = ""
    #: The variable of the API key the agent sends the provider, when it should be set.
    key: str = ""
    #: Arguments put before the agent's own: `{url}` is the base URL given to it.
    options: tuple[str, ...] = ()

    def arguments(self, base_url: str) -> list[str]:
        """The options that point this agent at `base_url` on its command line."""
        return [option.replace("{url}", base_url) for option in self.options]

    def pointed_by(self) -> str:
        """How wrap pointed it, as the error line tells a user whose agent ignored it."""
        if not self.options:
            return self.variable
        given = " ".join(o for o in self.options if "{url}" in o).split("=", 1)[0]
        return f"{given} (-c) or {self.variable}"


_CODEX_BASE_URL = ("-c", 'openai_base_url="{url}"')
AGENTS = {
    "claude": Agent("claude", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    "codex": Agent("codex", "OPENAI_BASE_URL", "https://api.openai.com", "/v1", options=_CODEX_BASE_URL),
    "gemini": Agent(
        "gemini", "GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com", key="GEMINI_API_KEY"
    ),
}
#: Codex CLI signed in with ChatGPT: the ChatGPT backend behind the same key, bodies uncompressed.
CODEX_WITH_CHATGPT = Agent(
    "codex",
    "OPENAI_BASE_URL",
    "https://chatgpt.com/backend-api/codex",
    options=(*_CODEX_BASE_URL, "-c", "features.enable_request_compression=false"),
)
#: Gemini CLI signed in with Google: Google's Code Assist API, at the endpoint the variable names.
GEMINI_WITH_GOOGLE = Agent("gemini", "CODE_ASSIST_ENDPOINT", "https://cloudcode-pa.googleapis.com")
#: Gemini CLI's ways to sign in that talk to Code Assist (`selectedType` in its settings).
GOOGLE_SIGN_INS = ("oauth-personal", "cloud-shell", "compute-default-credentials")
#: For `ctxfit wrap --env VAR -- COMMAND`: the provider a well-known variable points at.
KNOWN_VARIABLES = {agent.variable: agent for agent in AGENTS.values()}


def agent_named(name: str, environ: dict) -> Agent:
    """The agent `ctxfit wrap NAME` runs, as it is set up here (how it signs in)."""
    if name == "codex" and codex_signed_in_with_chatgpt(environ):
        return CODEX_WITH_CHATGPT
    if name == "gemini" and gemini_signed_in_with_google(environ):
        return GEMINI_WITH_GOOGLE
    return AGENTS[name]


def gemini_signed_in_with_google(environ: dict, project: Path | None = None) -> bool:
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


def environment_for(agent: Agent, environ: dict, folder: Path) -> dict[str, str]:
    """Variables the agent needs besides its base URL to use it (files go in `folder`): Gemini
    CLI with no way to sign in selected gets API-key auth selected in its lowest settings."""
    if agent is not AGENTS["gemini"]:
        return {}
    defaults_path = Path(environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or "/etc/gemini-cli/system-defaults.json")
    defaults = _json_object(defaults_path) or {}
    security = defaults.setdefault("security", {}) if isinstance(defaults.get("security", {}), dict) else {}
    auth = security.setdefault("auth", {}) if isinstance(security.get("auth", {}), dict) else {}
    auth.setdefault("selectedType", "gemini-api-key")
    path = _private(folder) / "gemini-system-defaults.json"
    staged = path.with_name(f"{path.name}.{os.getpid()}")
    staged.write_text(json.dumps(defaults, indent=2), encoding="utf-8")
    staged.replace(path)  # (another wrap may be reading it: replaced whole)
    return {"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(path)}


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


def codex_signed_in_with_chatgpt(environ: dict) -> bool:
    """Whether Codex uses a ChatGPT login ($CODEX_HOME/auth.json, default ~/.codex): its
    `auth_mode`, or, in files from before it was written, tokens and no API key."""
    home = Path(environ.get("CODEX_HOME") or Path(environ.get("HOME") or Path.home()) / ".codex")
    auth = _json_object(home / "auth.json")
    if auth is None:
        return False  # no login saved: an API key, if anything
    mode = auth.get("auth_mode")
    if isinstance(mode, str):
        return mode.lower().startswith("chatgpt")
    return bool(auth.get("tokens")) and not auth.get("OPENAI_API_KEY")


def agent_for_variable(variable: str, command: str) -> Agent:
    """The agent description for `--env VAR -- COMMAND`."""
    known = KNOWN_VARIABLES.get(variable)
    return Agent(command, variable, known.upstream if known else "", known.suffix if known else "")


def upstream_for(agent: Agent, given: str | None, environ: dict) -> str:
    """The provider to forward to: `--upstream`, else where the agent's variable pointed
    already (the user's own gateway), else the agent's provider."""
    if given:
        return given
    current = (_codex_configured_base(environ) if agent.options else "") or environ.get(agent.variable, "")
    current = current.rstrip("/")
    if current:
        return current[: -len(agent.suffix)] if agent.suffix and current.endswith(agent.suffix) else current
    return agent.upstream


def _codex_configured_base(environ: dict) -> str:
    """The `openai_base_url` of Codex's own config.toml (a user's gateway), or ""."""
    import tomllib

    home = Path(environ.get("CODEX_HOME") or Path(environ.get("HOME") or Path.home()) / ".codex")
    try:
        value = tomllib.loads((home / "config.toml").read_text(encoding="utf-8")).get("openai_base_url")
    except (OSError, ValueError):
        return ""
    return value if isinstance(value, str) else ""


def _json_object(path: Path) -> dict | None:
    """The JSON object an agent's settings file holds; None when there is none to read."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
