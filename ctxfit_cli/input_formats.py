"""What the CLI's help shows of the readers (ctxfit_cli/formats), kept outside that package so
that `ctxfit --help` imports no reader: the input formats' names and the line limit.

`FORMATS` is written out, not built from the agents' registry, so that a command's help imports
none of them: it is the plain formats (`PLAIN_FORMATS`) and every registered agent's name, which
`tests/test_agent_registry.py` checks.
"""

#: The formats that are no agent's log: chat messages of each API, a request, Gemini contents.
PLAIN_FORMATS = ("openai", "anthropic", "request", "gemini")
#: What `--format` offers.
FORMATS = (
    "openai",
    "anthropic",
    "claude-code",
    "codex",
    "request",
    "swe-agent",
    "openhands",
    "cline",
    "aider",
    "opencode",
    "gemini",
    "gemini-cli",
    "copilot-cli",
    "pi",
    "cursor",
    "opencode-export",
    "continue",
    "cline-ui",
    "kilo-code",
    "opencode-db",
    "qwen-code",
    "goose",
    "amp",
    "crush",
    "cline-cli",
)
#: The longest line (or single JSON document) read by default, in MiB. A provider refuses a
#: request over 32 MB, so no real record is longer; `--max-line-mb` raises it.
DEFAULT_LINE_LIMIT_MB = 64
