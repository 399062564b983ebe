"""An OpenCode database (1.2 and later) built with OpenCode's own schema (the `session`, `message` and
`part` tables of `packages/opencode/src/session/session.sql.ts`, as drizzle creates them) from
an `opencode export`: no real database was at hand, and an export holds the same rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL);
CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text,
  `parent_id` text, `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer,
  `summary_files` integer, `summary_diffs` text, `cost` real DEFAULT 0 NOT NULL,
  `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,
  `tokens_reasoning` integer DEFAULT 0 NOT NULL, `tokens_cache_read` integer DEFAULT 0 NOT NULL,
  `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text, `permission` text, `agent` text,
  `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer,
  FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE cascade);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL,
  FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE cascade);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL,
  FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE cascade);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`, `time_created`, `id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`, `id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
"""


def database_of(exports: list[Path], path: Path) -> Path:
    """A database at `path` holding the sessions of these exports (their rows as OpenCode writes them)."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    for export in exports:
        add_export(db, json.loads(export.read_bytes()))
    db.commit()
    db.close()
    return path


def add_export(db: sqlite3.Connection, export: dict) -> None:
    info = export["info"]
    created, updated = info["time"]["created"], info["time"]["updated"]
    db.execute("INSERT OR IGNORE INTO project VALUES (?, ?, 'git', NULL, ?, ?)",
               (info["projectID"], info["directory"], created, updated))
    tokens = info.get("tokens", {})
    db.execute(
        "INSERT INTO session (id, project_id, slug, directory, path, title, version, cost, tokens_input, "
        "tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, "
        "time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (info["id"], info["projectID"], info.get("slug", ""), info["directory"], info.get("path"), info["title"],
         info["version"], info.get("cost", 0), tokens.get("input", 0), tokens.get("output", 0),
         tokens.get("reasoning", 0), tokens.get("cache", {}).get("read", 0), tokens.get("cache", {}).get("write", 0),
         info.get("agent"), json.dumps(info.get("model")), created, updated),
    )
    for message in export["messages"]:
        data = {k: v for k, v in message["info"].items() if k not in ("id", "sessionID")}
        when = data["time"]["created"]
        db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                   (message["info"]["id"], info["id"], when, when, json.dumps(data)))
        for part in message["parts"]:
            body = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
            db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                       (part["id"], message["info"]["id"], info["id"], when, when, json.dumps(body)))
