"""ctxfit's recorded cost per session against ccusage's, on the shared Claude Code and Codex logs.

Lays the logs out as the agents do (`<claude>/projects/<project>/<id>.jsonl`,
`<codex>/sessions/YYYY/MM/DD/<rollout>.jsonl`) in a temporary folder, runs
`npx ccusage session --json --offline` on it (HOME, CLAUDE_CONFIG_DIR and CODEX_HOME pointed
there, so nothing else on the machine is read) and `ctxfit sessions --json` on the same files,
and prints one row per session (docs/cost.md). `CCUSAGE_DIR`: a folder where ccusage is
installed (`npm install ccusage@20.0.24`); else it is installed into a temporary one.

    python bench/ccusage_compare.py [REALWORLD_DIR]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REALWORLD = ROOT.parent / "shared" / "realworld"
#: The ccusage release compared with (its native build for linux-x64 exists from 20.0.11 to 20.0.24).
CCUSAGE = "ccusage@20.0.24"


def install_ccusage(folder: Path) -> Path:
    """ccusage installed in `folder` with npm (the registry must be reachable)."""
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", CCUSAGE], cwd=folder, check=True,
                   capture_output=True, timeout=300)
    return folder


def lay_out(realworld: Path, home: Path) -> list[Path]:
    """The Claude Code and Codex logs copied where the agents keep them; the copies."""
    claude = home / "claude" / "projects" / "realworld"
    codex = home / "codex" / "sessions" / "2026" / "01" / "01"
    claude.mkdir(parents=True)
    codex.mkdir(parents=True)
    copies = []
    for source, target in ((realworld / "claude-code", claude), (realworld / "codex", codex)):
        for log in sorted(source.glob("*.jsonl")):
            copies.append(Path(shutil.copy(log, target / log.name)))
    return copies


def ccusage_sessions(ccusage: Path, home: Path) -> dict[str, dict]:
    """ccusage's sessions by file name (without .jsonl)."""
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / "claude"),
           "CODEX_HOME": str(home / "codex"), "NO_COLOR": "1"}
    done = subprocess.run(["npx", "--no-install", "ccusage", "session", "--json", "--offline"], cwd=ccusage,
                          env=env, capture_output=True, text=True, timeout=300, check=True)
    document = json.loads(done.stdout)
    return {row["period"].rsplit("/", 1)[-1]: row for row in document["session"]}


def ctxfit_sessions(copies: list[Path]) -> dict[str, dict]:
    """ctxfit's sessions by file name (without .jsonl), as `ctxfit sessions --json` prints them."""
    done = subprocess.run([sys.executable, "-m", "ctxfit_cli", "sessions", "--json", "-q", *map(str, copies)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    document = json.loads(done.stdout)
    return {Path(row["path"]).stem: row for row in document["sessions"]}


def compare(realworld: Path = REALWORLD, ccusage_dir: str | None = None) -> list[dict]:
    """One row per session ccusage reports: both costs and their difference."""
    with tempfile.TemporaryDirectory() as scratch:
        scratch_path = Path(scratch)
        home = scratch_path / "home"
        copies = lay_out(realworld, home)
        if ccusage_dir:
            ccusage = Path(ccusage_dir)
        else:
            (scratch_path / "npm").mkdir()
            ccusage = install_ccusage(scratch_path / "npm")
        theirs = ccusage_sessions(ccusage, home)
        ours = ctxfit_sessions(copies)
    rows = []
    for name, row in sorted(theirs.items(), key=lambda item: -item[1]["totalCost"]):
        mine = ours.get(name)
        usd = mine["cost"]["usd"] if mine else None
        difference = (usd - row["totalCost"]) / row["totalCost"] if usd is not None and row["totalCost"] else None
        rows.append({"session": name, "agent": row.get("agent", ""), "ccusage": row["totalCost"], "ctxfit": usd,
                     "difference": difference, "skipped_by_ctxfit": mine is None})
    return rows


def main() -> None:
    realworld = Path(sys.argv[1]) if len(sys.argv) > 1 else REALWORLD
    print(f"| session | agent | ccusage ({CCUSAGE.split('@')[1]}) | ctxfit | difference |")
    print("|---|---|--:|--:|--:|")
    for row in compare(realworld, os.environ.get("CCUSAGE_DIR")):
        ctxfit = "not a session (see note)" if row["ctxfit"] is None else f"${row['ctxfit']:.4f}"
        difference = "—" if row["difference"] is None else f"{row['difference']:+.2%}"
        print(f"| {row['session']} | {row['agent']} | ${row['ccusage']:.4f} | {ctxfit} | {difference} |")


if __name__ == "__main__":
    main()
