"""What the CLI's help shows of the readers (ctxfit_cli/formats), kept outside that package so
that `ctxfit --help` imports no reader: the input formats' names and the line limit."""

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
)
#: The longest line (or single JSON document) read by default, in MiB. A provider refuses a
#: request over 32 MB, so no real record is longer; `--max-line-mb` raises it.
DEFAULT_LINE_LIMIT_MB = 64
