"""Any value anywhere in a real Codex rollout, Gemini chat or Responses body replaced by any JSON value:
the import either works (and plans) or fails with a ``SessionError`` naming the file, never otherwise."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.importers.support import raw_lines
from tests.importers.test_import_agents import CODEX_COMPACTED, CODEX_EXEC, GEMINI_JSON, GEMINI_JSONL, RESPONSES
from tests.importers.test_import_fuzz import JSON_VALUES, _check, _paths, _replace

LOGS = {p: raw_lines(p) for p in (CODEX_EXEC, CODEX_COMPACTED, GEMINI_JSONL)}
LOG_PATHS = {p: [q for q in _paths(v) if q and len(q) <= 6] for p, v in LOGS.items()}
DOCUMENTS = {p: json.loads(p.read_text(encoding="utf-8")) for p in (GEMINI_JSON, RESPONSES)}
DOCUMENT_PATHS = {p: [q for q in _paths(v) if len(q) <= 6] for p, v in DOCUMENTS.items()}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), new=JSON_VALUES)
def test_mutated_agent_logs_import_or_fail_cleanly(tmp_path, data, new):
    source = data.draw(st.sampled_from(sorted(LOGS, key=str)))
    where = data.draw(st.sampled_from(LOG_PATHS[source]))
    lines = _replace(LOGS[source], where, new)
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    _check(path)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), new=JSON_VALUES)
def test_mutated_agent_documents_import_or_fail_cleanly(tmp_path, data, new):
    source = data.draw(st.sampled_from(sorted(DOCUMENTS, key=str)))
    where = data.draw(st.sampled_from(DOCUMENT_PATHS[source]))
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(_replace(DOCUMENTS[source], where, new)), encoding="utf-8")
    _check(path)
