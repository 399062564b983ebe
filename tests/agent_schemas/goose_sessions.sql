-- A Goose sessions.db (~/.local/share/goose/sessions/sessions.db), built from Goose's own schema:
-- the CREATE TABLE statements of block/goose crates/goose/src/session/session_manager.rs
-- (commit dbec1655c17720cb591291603f1337ed7856afbd, `create_schema`), message JSON as
-- crates/goose/src/conversation/message.rs serializes it (commit 05132966065f7dd80b97af7d080a41328d103073).
-- No real Goose database was available; the rows below are made up in that shape.
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
INSERT INTO schema_version (version) VALUES (9);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT,
    tenant_id TEXT, user_id TEXT
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT
);
CREATE INDEX idx_messages_session ON messages(session_id);
INSERT INTO sessions (id, name, description, user_set_name, session_type, working_dir, created_at, updated_at, extension_data, total_tokens, input_tokens, output_tokens, accumulated_total_tokens, accumulated_input_tokens, accumulated_output_tokens, provider_name, model_config_json) VALUES ('20260210_1', 'Count README words', '', 0, 'user', '/home/user/proj', '2026-02-10 09:15:02', '2026-02-10 09:21:40', '{}', 9520, 9400, 120, 28140, 27500, 640, 'anthropic', '{"model_name": "claude-sonnet-4-5-20250929", "context_limit": 200000, "temperature": null, "max_tokens": null, "toolshim": false, "toolshim_model": null}');
INSERT INTO sessions (id, name, description, session_type, working_dir, created_at, updated_at, extension_data, accumulated_input_tokens, accumulated_output_tokens, schedule_id) VALUES ('20260211_1', 'Scheduled: changelog', '', 'scheduled', '/home/user/proj', '2026-02-11 07:00:00', '2026-02-11 07:00:09', '{}', 1200, 30, 'daily-changelog');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-1', '20260210_1', 'user', '[{"type": "text", "text": "What does this project do?"}]', 1770714902, '{"userVisible": true, "agentVisible": false}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-2', '20260210_1', 'assistant', '[{"type": "text", "text": "It counts words."}]', 1770714905, '{"userVisible": true, "agentVisible": false}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-3', '20260210_1', 'user', '[{"type": "text", "text": "Summary of the conversation so far: the user asked what the project does; it counts words."}]', 1770715000, '{"userVisible": false, "agentVisible": true}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-4', '20260210_1', 'user', '[{"type": "text", "text": "How many words are in README.md?"}]', 1770715010, '{"userVisible": true, "agentVisible": true}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-5', '20260210_1', 'assistant', '[{"type": "text", "text": "Let me count them."}, {"type": "toolRequest", "id": "toolu_01", "toolCall": {"status": "success", "value": {"name": "developer__shell", "arguments": {"command": "wc -w README.md"}}}}]', 1770715013, '{"userVisible": true, "agentVisible": true}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-6', '20260210_1', 'user', '[{"type": "toolResponse", "id": "toolu_01", "toolResult": {"status": "success", "value": {"content": [{"type": "text", "text": "42 README.md"}], "isError": false}}}]', 1770715014, '{"userVisible": true, "agentVisible": true}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-7', '20260210_1', 'assistant', '[{"type": "toolRequest", "id": "toolu_02", "toolCall": {"status": "success", "value": {"name": "developer__text_editor", "arguments": {"command": "view", "path": "/home/user/proj/NOPE.md"}}}}]', 1770715016, '{"userVisible": true, "agentVisible": true}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-8', '20260210_1', 'user', '[{"type": "toolResponse", "id": "toolu_02", "toolResult": {"status": "error", "error": "-32603: File not found"}}, {"type": "shinyThing", "x": 1}]', 1770715017, '{"userVisible": true, "agentVisible": true}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-9', '20260210_1', 'assistant', '[{"type": "text", "text": "README.md has 42 words."}]', 1770715020, '{"userVisible": true, "agentVisible": true}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-10', '20260211_1', 'user', '[{"type": "text", "text": "Write today''s changelog entry."}]', 1770793200, '{"userVisible": true, "agentVisible": true}');
INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json) VALUES ('m-11', '20260211_1', 'assistant', '[{"type": "text", "text": "Nothing changed today."}]', 1770793208, '{"userVisible": true, "agentVisible": true}');
