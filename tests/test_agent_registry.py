"""The agents' registry (`ctxfit_cli/agents/`, DESIGN §14): every agent declares what users and
messages need, recognises its own real log and no plain chat or request, `--format` offers exactly
the plain formats and the agents, the docs list every agent, and no module outside an agent's own
(and its reader's) knows anything of one agent: the generic code asks the registry."""

from __future__ import annotations

import ast
import importlib
import io
import re
from pathlib import Path

import pytest
from conftest import REALWORLD, ROOT, SAMPLES, needs_realworld

from ctxfit_cli.agents import BY_NAME, REGISTRY
from ctxfit_cli.fleet.discovery import expand
from ctxfit_cli.formats.detection import DETECT_RECORDS, detect_records, detect_text
from ctxfit_cli.formats.reading import read_records
from ctxfit_cli.input_formats import FORMATS, PLAIN_FORMATS

SCHEMAS = ROOT / "tests" / "agent_schemas"
#: Agents of which no real log was found: a log built from the agent's own schema stands in for
#: one (`tests/agent_schemas/README.md` says from what).
SCHEMA_LOGS = {
    "qwen-code": SCHEMAS / "qwen_code_session.jsonl",
    "goose": SCHEMAS / "20250301_120000.jsonl",
    "amp": SCHEMAS / "T-019b9d03-62e3-772f-9780-3e637f90eaec.json",
    "cline-cli": SCHEMAS / "cline_cli" / "1796678303488_uzqs7.messages.json",
}
#: Agents whose logs are databases (`Agent.database`), each with a builder of one:
#: `test_each_database_is_its_own_agent_s` makes one of each.
DATABASES = {"opencode-db", "goose", "crush"}
#: Agents with no log of their own, and why.
NO_LOG_OF_ITS_OWN = {
    "kilo-code": "its files are Cline's, recognised as Cline's (its module adds only its folders)",
}
#: Plain values no agent may take for its own: chat messages, requests, Gemini contents.
PLAIN_VALUES = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
    {"role": "tool", "tool_call_id": "c1", "content": "42"},
    {"role": "system", "content": "You are an agent."},
    {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]},
    {"model": "claude-opus-4-6", "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]},
    {"model": "gpt-5", "input": [{"role": "user", "content": "hi"}]},
    {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    {"role": "model", "parts": [{"text": "hello"}]},
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    [],
    {},
]


def test_every_agent_declares_what_users_and_messages_need():
    assert len(BY_NAME) == len(REGISTRY), "two agents share a name"
    for agent in REGISTRY:
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", agent.name), agent.name
        assert agent.title and agent.looks_like, agent.name
        assert callable(agent.recognise) and callable(agent.describe), agent.name
        assert (agent.read is not None or agent.read_text is not None) != bool(agent.conversation_elsewhere), (
            f"{agent.name}: either it is read, or it says where its conversation is"
        )
        assert (agent.read_text is None) == (agent.recognise_text is None), agent.name
        assert agent.compaction_at(200_000) is None or 0 < agent.compaction_at(200_000) < 200_000, agent.name


def test_the_formats_offered_are_the_plain_ones_and_every_agent_s():
    assert len(set(FORMATS)) == len(FORMATS)
    assert set(FORMATS) == set(PLAIN_FORMATS) | {agent.name for agent in REGISTRY}
    assert not set(PLAIN_FORMATS) & set(BY_NAME)


def _plain_records() -> list[object]:
    """Every record of the plain samples (chat transcripts and a request), and `PLAIN_VALUES`."""
    values = list(PLAIN_VALUES)
    for path in sorted(SAMPLES.glob("*.anthropic.json*")) + sorted(SAMPLES.glob("*.openai.json*")):
        values += [record.value for record in read_records(str(path), io.BytesIO(path.read_bytes()))]
    return values


@pytest.mark.parametrize("agent", REGISTRY, ids=lambda agent: agent.name)
def test_no_agent_takes_a_plain_chat_or_request_for_its_own(agent):
    values = _plain_records()
    assert len(values) > 50
    for value in values:
        assert not agent.recognise(value), (agent.name, str(value)[:200])
        assert agent.recognise_file is None or not agent.recognise_file("chat.jsonl", value), agent.name
    if agent.recognise_text is not None:
        assert not agent.recognise_text("chat.jsonl", SAMPLES.joinpath("openai_agent.openai.jsonl").read_bytes()[:64])


def _real_logs(folder: Path) -> list[str]:
    """The logs a folder walk finds in an agent's folder of real logs (all its files where the walk
    finds none: a log named with no suffix)."""
    return expand([str(folder)]) or sorted(str(p) for p in folder.rglob("*") if p.is_file())


@needs_realworld
@pytest.mark.parametrize("agent", REGISTRY, ids=lambda agent: agent.name)
def test_each_agent_recognises_its_real_logs(agent):
    """Each file of the agent's folder of real logs is detected as its own, by one of its first
    records (or its first bytes, for a log that is not JSON), the registry's order included."""
    folder = REALWORLD / agent.name
    if folder.exists():
        logs = _real_logs(folder)
    elif agent.name in SCHEMA_LOGS:
        logs = [str(SCHEMA_LOGS[agent.name])]
    elif agent.name in DATABASES | set(NO_LOG_OF_ITS_OWN):
        pytest.skip(NO_LOG_OF_ITS_OWN.get(agent.name, "a database: test_each_database_is_its_own_agent_s"))
    else:
        raise AssertionError(f"no real log of {agent.name} in {folder} (nor one built from its schema)")
    assert logs, f"no log of {agent.name} in {folder}"
    for path in logs:
        data = Path(path).read_bytes()
        found = detect_text(path, io.BytesIO(data))
        if found is None:
            found, _ = detect_records(path, read_records(path, io.BytesIO(data)))
        assert found == agent.name, path
        if agent.recognise_text is None:  # its own test takes one of the first records, whatever comes before it
            records = [r.value for _, r in zip(range(DETECT_RECORDS), read_records(path, io.BytesIO(data)))]
            assert any(
                agent.recognise(v) or (agent.recognise_file is not None and agent.recognise_file(path, v))
                for v in records
            ), path


def test_the_readme_and_the_design_list_every_agent():
    readme = (ROOT / "README.md").read_text()
    design = (ROOT / "docs" / "design.md").read_text()
    for agent in REGISTRY:
        assert f"`{agent.name}`" in readme, f"README.md's table of formats lacks {agent.name}"
        assert f"agents/{agent.name.replace('-', '_')}.py" in design or _module_of(agent) in design, (
            f"docs/design.md's list of agents lacks {agent.name} ({_module_of(agent)})"
        )


def _module_of(agent) -> str:
    """The file of the module that builds `agent`, as docs/design.md names it."""
    module = next(m for m in _agent_modules() if importlib.import_module(f"ctxfit_cli.agents.{m}").AGENT is agent)
    return f"agents/{module}.py"


def _agent_modules() -> list[str]:
    """The modules of the agents' package that build an agent."""
    folder = ROOT / "ctxfit_cli" / "agents"
    return sorted(p.stem for p in folder.glob("*.py") if re.search(r"^AGENT = Agent\(", p.read_text(), re.M))


# --- Nothing of one agent outside its module --------------------------------------------------

#: Modules outside `ctxfit_cli/agents/` that know one agent, each with why. (An agent's dialect
#: in `formats/` — the module named as its agent's, or starting so — is its reader: allowed.)
ALLOWED = {
    "input_formats.py": "`--format`'s names written out, so that a command's help imports no agent "
    "(checked against the registry: test_the_formats_offered_are_the_plain_ones_and_every_agent_s)",
    "formats/measures.py": "a big Claude Code log measured in pieces reads its records' content blocks "
    "directly, not merged into messages (the speed of `estimate` on a 256 MB log)",
    "fleet/log_split.py": "a big Claude Code log read in pieces on every core: its reader, in parallel",
    "fleet/log_pieces.py": "a big Claude Code log read in pieces on every core: its reader, in parallel",
    "fleet/work.py": "hands a big Claude Code log to log_split (its parallel reader)",
    "fleet/live_records.py": "Claude Code's and Codex's logs followed record by record (`watch`): their "
    "readers, one record at a time",
}
#: Home folders too common to mark one agent.
COMMON_FOLDERS = {".config", ".local"}


def _markers(agent) -> set[str]:
    """What names one agent: its format's name, the variables it honours, its own home folders."""
    folders = set(re.findall(r"~/(\.[\w.-]+)", agent.where)) - COMMON_FOLDERS
    return {agent.name, *agent.variables, *folders}


def _strings(tree: ast.Module) -> list[tuple[int, str]]:
    """The string constants of a module that are not docstrings (examples in a docstring are none
    of the code's knowledge)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def _agent_imports(tree: ast.Module, modules: list[str]) -> list[tuple[int, str]]:
    """The agents' modules a module imports by name (rather than asking the registry)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if "agents" in parts and parts[-1] in modules:
                found.append((node.lineno, parts[-1]))
            elif parts[-1] == "agents":
                found += [(node.lineno, alias.name) for alias in node.names if alias.name in modules]
    return found


def _own(relative: str, modules: list[str]) -> bool:
    """Whether a module is an agent's own: in the package, or its reader in `formats/`."""
    if relative.startswith("agents/"):
        return True
    folder, _, name = relative.rpartition("/")
    return folder == "formats" and any(name == f"{m}.py" or name.startswith(f"{m}_") for m in modules)


def test_no_agent_s_knowledge_is_found_outside_its_module():
    """Outside an agent's module (and its reader), no code names one agent: not its format's
    name (`format == "codex"`, a table keyed by it), not the variables it honours, not its home
    folder, not its module. Found: the module, line and marker, to move into the agent's module
    (an `Agent` field the generic code asks), or to justify in `ALLOWED`."""
    package = ROOT / "ctxfit_cli"
    modules = _agent_modules()
    markers = {marker: agent.name for agent in REGISTRY for marker in _markers(agent)}
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if _own(relative, modules) or relative in ALLOWED:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for line, text in _strings(tree):
            for marker, agent in markers.items():
                if text == marker or (marker != agent and marker in text):
                    found.append(f"{relative}:{line}: {text!r} ({agent})")
        found += [f"{relative}:{line}: imports agents.{module}" for line, module in _agent_imports(tree, modules)]
    assert found == [], "\n".join(found)


def test_the_allowed_modules_still_need_to_be():
    """An entry of `ALLOWED` that names no agent any more is dropped (the list stays short)."""
    package = ROOT / "ctxfit_cli"
    modules = _agent_modules()
    names = {agent.name for agent in REGISTRY}
    for relative in ALLOWED:
        tree = ast.parse((package / relative).read_text())
        strings = {text for _, text in _strings(tree)}
        assert strings & names or _agent_imports(tree, modules), f"{relative} no longer names an agent"


def test_the_registry_lists_every_agent_module():
    """An agent's module that builds an `Agent` is one line of `REGISTRY` (adding an agent is one
    module, its tests and that line)."""
    built = [importlib.import_module(f"ctxfit_cli.agents.{m}").AGENT for m in _agent_modules()]
    assert all(any(agent is registered for registered in REGISTRY) for agent in built)
    assert len(built) == len(REGISTRY)


@needs_realworld
def test_each_database_is_its_own_agent_s(tmp_path):
    """Of the agents that keep their sessions in a database, exactly one takes each database."""
    from opencode_database import database_of
    from test_agent_qwen_goose_amp_crush import database

    built = {
        "opencode-db": database_of(sorted((REALWORLD / "opencode-export").glob("*"))[:1], tmp_path / "opencode.db"),
        "goose": database("goose_sessions.sql", tmp_path / "goose" / "sessions.db"),
        "crush": database("crush.sql", tmp_path / "proj" / ".crush" / "crush.db"),
    }
    assert set(built) == {agent.name for agent in REGISTRY if agent.database is not None} == DATABASES
    for name, path in built.items():
        owners = [agent.name for agent in REGISTRY if agent.database is not None and agent.database(str(path))]
        assert owners == [name], path
