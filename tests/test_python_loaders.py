"""A carrier file a Python script of the tree reads itself (a ``.env`` through python-dotenv or by
hand, a YAML config whose ``env:`` block the script puts in ``os.environ``): the setting is kept
(BFM110, nothing changes) and the finding names the line that loads it and the command that
migrates the script, instead of saying that the setting reaches no script."""

from __future__ import annotations

from pathlib import Path

from bf16_migrate.carriers.python_loaders import python_loaders
from bf16_migrate.project import migrate_paths

ROOT = Path(__file__).resolve().parent.parent
TRAIN = (ROOT / "fixtures" / "project" / "src" / "train.py").read_text()

DOTENV_LOOP = """\
import os
from pathlib import Path

for line in Path(__file__).with_name(".env").read_text().splitlines():
    key, _, value = line.partition("=")
    os.environ.setdefault(key.strip(), value.strip())
"""

DOTENV_LIBRARY = """\
from dotenv import load_dotenv

load_dotenv()
"""

YAML_ENV = """\
import os
from pathlib import Path

import yaml

cfg = yaml.safe_load(Path(__file__).with_name('train.yaml').read_text())
for k, v in cfg.get("env", {}).items():
    os.environ[str(k)] = str(v)
"""


def _run(tmp_path: Path, loader: str, carrier: str, text: str, mode: str = "stochastic"):
    (tmp_path / "train.py").write_text(loader + TRAIN)
    (tmp_path / carrier).write_text(text)
    outcome = migrate_paths([tmp_path], mode, write=True)
    return outcome, [d for d in outcome.diagnostics if d.code == "BFM110"]


def test_a_dotenv_read_by_hand_is_kept_and_the_loading_line_named(tmp_path):
    before = "XLA_USE_BF16=1\n"
    outcome, found = _run(tmp_path, DOTENV_LOOP, ".env", before)
    assert len(found) == 1 and not found[0].fixed
    message = found[0].message
    assert "train.py reads this file itself at run time (line 4: `for line in Path(__file__)" in message
    assert "--legacy-env XLA_USE_BF16=1" in message and "reaches no Python script" not in message
    assert (tmp_path / ".env").read_text() == before
    assert "bfloat16" not in (tmp_path / "train.py").read_text()  # nothing half done: the switch and the code kept
    assert not outcome.changed


def test_a_dotenv_loaded_by_python_dotenv_without_a_path(tmp_path):
    _, found = _run(tmp_path, DOTENV_LIBRARY, ".env", "XLA_USE_BF16=1\n", mode="amp")
    assert len(found) == 1 and "(line 3: `load_dotenv()`)" in found[0].message


def test_a_yaml_env_block_applied_by_the_script(tmp_path):
    _, found = _run(tmp_path, YAML_ENV, "train.yaml", "env:\n  XLA_USE_BF16: 1\nlr: 0.1\n")
    assert len(found) == 1
    assert "train.py reads this file itself at run time (line 6: `cfg = yaml.safe_load(" in found[0].message


def test_a_file_no_script_reads_still_reaches_no_script(tmp_path):
    _, found = _run(tmp_path, "", ".env", "XLA_USE_BF16=1\n")
    assert len(found) == 1 and "reaches no Python script of the tree" in found[0].message


def test_python_loaders_reads_bytes_and_skips_comments_and_other_directories(tmp_path):
    env = tmp_path / "conf" / ".env"
    env.parent.mkdir()
    env.write_text("XLA_USE_BF16=1\n")
    inside = tmp_path / "conf" / "run.py"
    inside.write_text("# load_dotenv() would read it\nfrom dotenv import load_dotenv\nload_dotenv()\n")
    beside = tmp_path / "other.py"  # python-dotenv looks upward from the script: not into conf/
    beside.write_text("from dotenv import load_dotenv\nload_dotenv()\n")
    named = tmp_path / "named.py"
    named.write_text("cfg = read('conf/x')\npath = ROOT / 'conf' / '.env'\n")
    found = python_loaders(env, [inside, beside, named, tmp_path / "gone.py"], lambda p: p.read_bytes())
    assert [(f.script.name, f.line, f.code) for f in found] == [
        ("run.py", 3, "load_dotenv()"),
        ("named.py", 2, "path = ROOT / 'conf' / '.env'"),
    ]
