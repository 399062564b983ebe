"""The agents `ctxfit wrap` knows, and how each is pointed at the proxy: the variable it reads
its API's base URL from, and the provider behind it, which depends on how it signs in.

Which variable each agent honours, from each agent's own source and docs: Claude Code
`ANTHROPIC_BASE_URL`; Codex CLI `OPENAI_BASE_URL` (read by its built-in `openai` provider,
codex-rs `model_provider_info.rs`; it ends in `/v1`, and Codex posts to `{it}/responses`;
signed in with ChatGPT rather than an API key, Codex talks to `chatgpt.com/backend-api/codex`
with the same variable overriding it, so wrap reads `$CODEX_HOME/auth.json` to know which
provider is behind it and points the variable at the proxy without `/v1`); Gemini CLI `GOOGLE_GEMINI_BASE_URL`
(its `contentGenerator.ts` passes it to `@google/genai` as the base URL with API-key auth,
`GEMINI_API_KEY`; signed in with Google it talks to Google's Code Assist API instead, at
`CODE_ASSIST_ENDPOINT` when that is set, gemini-cli `code_assist/server.ts`: wrap reads which
way it signs in from its settings, `security.auth.selectedType` or the older `selectedAuthType`
in `~/.gemini/settings.json` and the project's `.gemini/settings.json`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Agent:
    command: str
    #: The variable the agent reads its API's base URL from.
    variable: str
    #: The provider it talks to when the variable is not set.
    upstream: str
    #: What follows the proxy's address in the variable (the OpenAI SDKs expect `/v1`).
    suffix: str = ""
    #: The variable of the API key without which the agent does not use the base URL at all.
    key: str = ""


AGENTS = {
    "claude": Agent("claude", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    "codex": Agent("codex", "OPENAI_BASE_URL", "https://api.openai.com", "/v1"),
    "gemini": Agent(
        "gemini", "GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com", key="GEMINI_API_KEY"
    ),
}
#: Codex CLI signed in with ChatGPT: the ChatGPT backend behind the same variable.
CODEX_WITH_CHATGPT = Agent("codex", "OPENAI_BASE_URL", "https://chatgpt.com/backend-api/codex")
#: Gemini CLI signed in with Google: Google's Code Assist API, at the endpoint the variable names.
GEMINI_WITH_GOOGLE = Agent("gemini", "CODE_ASSIST_ENDPOINT", "https://cloudcode-pa.googleapis.com")
#: Gemini CLI's ways to sign in that talk to Code Assist (`selectedType` in its settings).
GOOGLE_SIGN_INS = ("oauth-personal", "cloud-shell", "compute-default-credentials")
#: For `ctxfit wrap --env VAR -- COMMAND`: the provider a well-known variable points at.
KNOWN_VARIABLES = {agent.variable: agent for agent in AGENTS.values()}


def agent_named(name: str, environ: dict) -> Agent:
    """The agent `ctxfit wrap NAME` runs, as it is set up here (Codex: how it signs in)."""
    if name == "codex" and codex_signed_in_with_chatgpt(environ):
        return CODEX_WITH_CHATGPT
    if name == "gemini" and gemini_signed_in_with_google(environ):
        return GEMINI_WITH_GOOGLE
    return AGENTS[name]


def gemini_signed_in_with_google(environ: dict, project: Path | None = None) -> bool:
    """Whether Gemini CLI talks to Code Assist: the way to sign in its settings select (the
    project's over the user's), else, with none selected, whether no API key is set."""
    home = Path(environ.get("HOME") or Path.home())
    selected = None
    for settings in (home / ".gemini" / "settings.json", (project or Path.cwd()) / ".gemini" / "settings.json"):
        selected = _selected_sign_in(settings) or selected
    if selected is not None:
        return selected in GOOGLE_SIGN_INS
    return not environ.get(AGENTS["gemini"].key)


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
    current = environ.get(agent.variable, "").rstrip("/")
    if current:
        return current[: -len(agent.suffix)] if agent.suffix and current.endswith(agent.suffix) else current
    return agent.upstream


def _json_object(path: Path) -> dict | None:
    """The JSON object an agent's settings file holds; None when there is none to read."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
