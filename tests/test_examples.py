"""Each program of examples/ runs as its docstring says and prints what it shows.

The programs that need a model on this machine (examples/hosted_model.py and
examples/local_model.py) are run by tests/models/test_model_examples.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

PRINTED = {
    "policy_consent.py": """\
list_files     read         -> allow (read tools run under the default preset)
delete_file    destructive  -> ask (the policy asks before tools matching 'delete_*')
shell_exec     local        -> ask (local tools ask for consent)
drop_database  destructive  -> deny (the policy denies tools matching 'drop_*')

  asked: may delete_file {'path': 'notes.txt'} run? (the policy asks before tools matching 'delete_*')
  asked: may shell_exec {'command': 'ls'} run? (local tools ask for consent)
list_files     -> SUCCESS: ['notes.txt', 'report.pdf']
delete_file    -> DENIED: {'denied': {'tool': 'delete_file', 'reason': 'keep my files'}}
shell_exec     -> SUCCESS: ran 'ls'
shell_exec     -> SUCCESS: ran 'pwd'
drop_database  -> DENIED: {'denied': {'tool': 'drop_database', 'reason': "the policy denies tools matching 'drop_*'"}}
grants: ['shell_exec']
answer: I listed the files and ran two commands; deleting and dropping were refused.
""",
    "filters.py": """\
  audit: get_stock_price c1 allow -> SUCCESS
c1 get_stock_price -> SUCCESS: 123.4  attempts=2, cache=miss
  audit: get_stock_price c2 allow -> SUCCESS
c2 get_stock_price -> SUCCESS: 123.4  attempts=1, cache=hit
  audit: search_web c3 allow -> SUCCESS
c3 search_web -> SUCCESS: ['https://example.org/?q=toolwire']  attempts=1, cache=miss
  audit: search_web c4 allow -> SUCCESS
c4 search_web -> SUCCESS: ['https://example.org/?q=filters']  attempts=1, cache=miss
  audit: search_web c5 allow -> ERROR
c5 search_web -> ERROR: {'error': {'message': "Rate limit reached for 'search_web': at most 2 calls per 60 s. \
Try again in 60.0 s, or continue without it.", 'code': 'rate_limited'}}
  audit: read_file c6 allow -> SUCCESS
c6 read_file -> SUCCESS: contents of notes/todo.txt  attempts=1, cache=miss
c7 read_file -> CANCELED: {'canceled': {'reason': 'A filter canceled the call', 'by': 'policy'}}
""",
    "resume_after_crash.py": """\
crash: the process dies while export_notes runs
the first process exited with status 9
unfinished: True
c1 add_note -> SUCCESS: saved 'call the bank'
c2 export_notes -> CANCELED: {'canceled': {'reason': 'The call was interrupted when the process stopped; \
it may not have run', 'by': 'system'}}
answer: The note is saved; the export was interrupted, shall I try it again?
unfinished: False
""",
    "client_over_wire.py": """\
server runs get_weather {'city': 'Paris'}
client ran OpenFile {'path': 'notes.md'}: ok
It is 21 °C in Paris; the editor says: notes.md is open
""",
}


def run_example(name: str, env: dict[str, str] | None = None, timeout: float = 60) -> str:
    """Run examples/NAME as a reader would, from the repository's root; return what it printed."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def settled(printed: str) -> str:
    """The rate limit's wait, which depends on how long the previous calls took, as in the listing."""
    return re.sub(r"Try again in \d+\.\d s", "Try again in 60.0 s", printed)


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_the_example_prints_what_it_shows(name: str) -> None:
    assert settled(run_example(name)) == PRINTED[name]


def test_every_example_is_run_by_a_test() -> None:
    in_other_tests = {"quickstart.py", "client_tools.py", "hosted_model.py", "local_model.py"}
    assert sorted(path.name for path in EXAMPLES.glob("*.py")) == sorted({*PRINTED, *in_other_tests})
    for name in sorted({*PRINTED, *in_other_tests}):
        assert "def main(" in (EXAMPLES / name).read_text(), f"{name}: an example is a program with a main()"
