"""A real n8n (the pinned CLI that scripts/install_n8n.sh puts in var/n8n) running the shipped
workflows of examples/n8n against a knowhub: used by the workflow tests and ``bench_n8n``.

Only what talks to Notion is replaced: the trigger becomes a Manual Trigger followed by a Code
node of the same name that emits recorded Notion items (shaped as n8n's Notion nodes give them),
and any other node that would call Notion becomes a Code node emitting its recorded output.
Every other node, connection and credential reference of the shipped workflow is kept as is.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

BASE = Path(__file__).resolve().parents[1]
N8N_BIN = BASE / "var" / "n8n" / "node_modules" / ".bin" / "n8n"
EXAMPLES = BASE / "examples" / "n8n"


def n8n_missing() -> str:
    """Why the real n8n cannot run here ("" when it can)."""
    if shutil.which("node") is None:
        return "node is not installed (scripts/install_n8n.sh needs node and npm)"
    if not N8N_BIN.exists():
        return "n8n is not installed: run scripts/install_n8n.sh (installs the pinned n8n into var/n8n)"
    return ""


def _code_node(original: dict, items: list[dict]) -> dict:
    """A Code node with ``original``'s name, id and place that emits ``items``."""
    code = f"return {json.dumps(items)}.map((json) => ({{ json }}));"
    node = {
        "parameters": {"jsCode": code}, "id": original["id"], "name": original["name"],
        "type": "n8n-nodes-base.code", "typeVersion": 2, "position": original["position"],
    }  # fmt: skip
    if original.get("alwaysOutputData"):
        node["alwaysOutputData"] = True
    return node


def substituted(workflow: dict, *, trigger: str, recorded: dict[str, list[dict]], workflow_id: str) -> dict:
    """``workflow`` with its trigger and the nodes named in ``recorded`` emitting recorded items."""
    wf = copy.deepcopy(workflow)
    names = {n["name"] for n in wf["nodes"]}
    assert trigger in recorded and set(recorded) <= names, (trigger, set(recorded), names)
    wf["nodes"] = [_code_node(n, recorded[n["name"]]) if n["name"] in recorded else n for n in wf["nodes"]]
    start = {
        "parameters": {}, "id": "00000000-0000-4000-8000-00000000feed", "name": "Start (test)",
        "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [-220, 0],
    }  # fmt: skip
    wf["nodes"].append(start)
    wf["connections"]["Start (test)"] = {"main": [[{"node": trigger, "type": "main", "index": 0}]]}
    wf["id"] = workflow_id
    wf["name"] = f"{workflow['name']} [{workflow_id}]"
    return wf


@dataclass
class Execution:
    ok: bool
    output: str

    def node_items(self, name: str) -> list[dict]:
        """The JSON items node ``name`` returned (a successful execution's ``--rawOutput``)."""
        data = json.loads(self.output[self.output.index("{") :])
        runs = data["data"]["resultData"]["runData"].get(name) or []
        return [item["json"] for run in runs for out in (run.get("data") or {}).get("main", []) for item in out or []]

    def error(self) -> dict:
        """The failed execution's error as n8n records it: ``message`` is the headline its editor
        shows, ``description`` the text under it (for an HTTP error, found in the response body)."""
        start = self.output.index("{", self.output.index("Execution error:"))
        data, _ = json.JSONDecoder().raw_decode(self.output[start:])
        return data["data"]["resultData"]["error"]


class N8n:
    """One n8n home (its own SQLite database and encryption key) under ``home``."""

    def __init__(self, home: Path, env: dict[str, str]):
        self.home = home
        self.env = {
            **os.environ, "N8N_USER_FOLDER": str(home), "N8N_DIAGNOSTICS_ENABLED": "false",
            "N8N_VERSION_NOTIFICATIONS_ENABLED": "false", "N8N_TEMPLATES_ENABLED": "false",
            "N8N_PERSONALIZATION_ENABLED": "false", "N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS": "false",
            "N8N_RUNNERS_ENABLED": "true", "N8N_LOG_LEVEL": "info", "NODE_OPTIONS": "--max-old-space-size=1024",
            **env,
        }  # fmt: skip

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(N8N_BIN), *args], env=self.env, cwd=self.home, capture_output=True, text=True, timeout=timeout
        )

    def import_credentials(self, credentials: list[dict]) -> None:
        path = self.home / "credentials.json"
        path.write_text(json.dumps(credentials))
        done = self.cli("import:credentials", f"--input={path}")
        assert done.returncode == 0, done.stdout + done.stderr

    def import_workflows(self, workflows: list[dict]) -> None:
        folder = self.home / "workflows"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        for wf in workflows:
            (folder / f"{wf['id']}.json").write_text(json.dumps(wf))
        done = self.cli("import:workflow", "--separate", f"--input={folder}")
        assert done.returncode == 0, done.stdout + done.stderr

    def execute(self, workflow_id: str) -> Execution:
        done = self.cli("execute", f"--id={workflow_id}", "--rawOutput")
        output = done.stdout + done.stderr
        ok = done.returncode == 0 and "Execution was NOT successful" not in output and "Execution error" not in output
        return Execution(ok=ok, output=output)


def shipped(filename: str) -> dict:
    return json.loads((EXAMPLES / filename).read_text())


def header_credential(credential_id: str, name: str, value: str) -> dict:
    """An n8n Header Auth credential (imported decrypted; n8n encrypts it with its own key)."""
    return {
        "id": credential_id, "name": name, "type": "httpHeaderAuth",
        "data": {"name": "Authorization", "value": value},
    }  # fmt: skip


def credential_refs(workflow: dict) -> set[tuple[str, str, str]]:
    """``(type, id, name)`` of every credential the workflow's nodes name."""
    nodes = workflow["nodes"]
    return {(kind, ref["id"], ref["name"]) for n in nodes for kind, ref in (n.get("credentials") or {}).items()}


def workflow_ids(prefix: str):
    n = 0
    while True:
        n += 1
        yield re.sub(r"[^A-Za-z0-9]", "", prefix)[:10] + f"{n:06d}"
