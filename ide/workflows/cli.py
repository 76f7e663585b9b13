"""``arbor workflows list | validate | schema``: see, check and describe workflow files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ide.workflows.loader import AGENTS_DIR, SUFFIXES, check_file, load_catalog
from ide.workflows.schema import AgentProfile, Workflow, workflow_json_schema


def run_workflows(args: argparse.Namespace) -> int:
    if args.action == "schema":
        schema = AgentProfile.model_json_schema() if args.agent else workflow_json_schema()
        sys.stdout.write(json.dumps(schema, indent=2) + "\n")
        return 0
    if args.action == "list":
        return _list(Path(args.workspace).resolve(), args.as_json)
    return _validate([Path(p) for p in args.paths])


def _list(workspace: Path, as_json: bool) -> int:
    catalog = load_catalog(workspace)
    if as_json:
        data = {
            "workflows": [
                {
                    "name": w.name,
                    "description": w.metadata.description,
                    "workflow_type": w.metadata.workflow_type,
                    "path": str(catalog.origins[w.name]),
                    "stages": [{"id": s.key, "name": s.name, "required": s.required} for s in w.stages],
                }
                for w in catalog.workflows.values()
            ],
            "profiles": sorted(catalog.profiles),
            "problems": [str(p) for p in catalog.problems],
            "notices": catalog.notices,
        }
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        for workflow in catalog.workflows.values():
            stages = " → ".join(s.name + ("" if s.required else "?") for s in workflow.stages)
            sys.stdout.write(f"{workflow.name:32} {workflow.metadata.description}\n{'':32} {stages}\n")
            sys.stdout.write(f"{'':32} {catalog.origins[workflow.name]}\n")
        sys.stdout.write(f"agent profiles: {', '.join(sorted(catalog.profiles))}\n")
        for notice in catalog.notices:
            sys.stderr.write(f"arbor: note: {notice}\n")
        for problem in catalog.problems:
            sys.stderr.write(f"arbor: not loaded: {problem}\n")
    return 1 if catalog.problems else 0


def _validate(paths: list[Path]) -> int:
    """Check each file as a workflow (or, inside an agents/ folder, as a profile) and report every problem
    of each, ``FILE:LINE: field: problem`` sorted by line; 1 if any."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES)
        elif path.exists():
            files.append(path)
        else:
            sys.stderr.write(f"arbor: {path}: no such file\n")
            return 2
    profiles = load_catalog(None).profiles
    failed = 0
    # Profiles first: workflows are checked against the shipped profiles plus the profiles given with them.
    agents = [p for p in files if p.parent.name == AGENTS_DIR]
    for path in [*agents, *(p for p in files if p.parent.name != AGENTS_DIR)]:
        if path.parent.name == AGENTS_DIR:
            profile, problems = check_file(path, AgentProfile)
            if profile is not None:
                profiles[profile.name] = profile
        else:
            _, problems = check_file(path, Workflow, profiles)
        for problem in problems:
            sys.stderr.write(f"{problem}\n")
        if problems:
            failed += 1
        else:
            sys.stdout.write(f"{path}: ok\n")
    return 1 if failed else 0
