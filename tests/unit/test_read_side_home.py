"""Every query on a read-model table (`rm_*`) lives in the read side, projections/: the surfaces and the
root call its views (DESIGN.md, "Layers"). A pure scan of the source, no database."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the read side itself, and code that only exercises the service from outside
OWNERS = {"projections", "tests", "bench"}
READ_MODEL_TABLE = re.compile(r"\brm_\w+")


def sources() -> list[Path]:
    return sorted(path for path in ROOT.rglob("*.py")
                  if (parts := path.relative_to(ROOT).parts)[0] not in OWNERS
                  and not any(part.startswith(".") for part in parts))


def docstrings(tree: ast.AST) -> set[int]:
    """The docstrings' nodes: prose may name a read-model table, SQL may not."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def read_model_sql(path: Path) -> list[str]:
    """`line: table` for each string in the file (f-strings' parts included) that names an `rm_` table."""
    tree = ast.parse(path.read_text(), str(path))
    prose = docstrings(tree)
    found = sorted((node.lineno, table) for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
                   for table in set(READ_MODEL_TABLE.findall(node.value)))
    return [f"{line}: {table}" for line, table in found]


def test_only_the_read_side_queries_read_models():
    offenders = [f"{path.relative_to(ROOT).as_posix()}:{found}" for path in sources() for found in read_model_sql(path)]
    assert not offenders, "SQL on read-model tables outside projections/ (move it into a view in " \
                          "projections/views/):\n" + "\n".join(offenders)


def test_the_scan_sees_sql_in_strings_but_not_docstrings(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""Reads rm_inbox."""\n'
                      'def f(x):\n    """From rm_websites."""\n'
                      '    return "SELECT 1 FROM rm_customers", f"SELECT {x} FROM rm_inbox c"\n')
    assert read_model_sql(sample) == ["4: rm_customers", "4: rm_inbox"]
