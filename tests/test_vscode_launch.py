"""VS Code's .vscode/launch.json is a launcher (carriers/vscode.py): a Python debug
configuration's "env" is a setting of the program it starts. The golden case is
fixtures/carriers/vscode/ (tests/test_carriers.py); these are the rules of the edit (JSON with
comments and trailing commas, byte for byte outside the removed member) and of the launch. Before,
the file was a ".json" reported by hand (BFM090), or, in its hidden directory, passed over."""

from __future__ import annotations

import json
from pathlib import Path

import json5
import pytest

from bf16_migrate.carriers import CarrierError, analyze
from bf16_migrate.carriers.model import REMOVE, REPLACE
from bf16_migrate.project import migrate_paths

ROOT = Path(__file__).resolve().parent.parent
TRAIN = (ROOT / "fixtures" / "project" / "src" / "train.py").read_text()


def config(env: str, extra: str = "") -> str:
    return (
        '{\n  "configurations": [\n    {\n      "name": "train",\n      "type": "debugpy",\n'
        '      "request": "launch",\n      "program": "${workspaceFolder}/train.py",\n'
        f'{extra}      "env": {env}\n    }}\n  ]\n}}\n'
    )


@pytest.mark.parametrize(
    "env, after",
    [
        ('{"XLA_USE_BF16": "1", "A": "x"}', '{"A": "x"}'),
        ('{"A": "x", "XLA_USE_BF16": "1", "B": "y"}', '{"A": "x", "B": "y"}'),
        ('{"A": "x", "XLA_USE_BF16": "1"}', '{"A": "x"}'),
        ('{"A": "x", "XLA_USE_BF16": "1",}', '{"A": "x",}'),
        ('{"XLA_USE_BF16": "1"}', "{}"),
        ('{\n        "A": "x",\n        "XLA_USE_BF16": "1"\n      }', '{\n        "A": "x"\n      }'),
        ('{\n        "A": "x", // a\n        "XLA_USE_BF16": "1"\n      }', '{\n        "A": "x", // a\n      }'),
        ('{\n        "XLA_USE_BF16": "1", // bf16\n        "A": "x"\n      }', '{\n        "A": "x"\n      }'),
        ('{/* keep */ "XLA_USE_BF16": "1", "A": "x"}', '{/* keep */ "A": "x"}'),
        ("{XLA_USE_BF16: '1', A: 'x'}", "{A: 'x'}"),  # JSON5 identifiers and single quotes are read too
    ],
)
def test_a_removed_env_member_leaves_the_rest_byte_for_byte(env, after):
    text = config(env)
    analysis = analyze("vscode", text, "/w/.vscode/launch.json")
    (entry,) = analysis.entries
    assert analysis.render is not None
    new = analysis.render({entry.id: REMOVE})
    assert new == config(after)
    json5.loads(new)


def test_a_replaced_member_keeps_its_quotes():
    analysis = analyze("vscode", config("{'XLA_USE_BF16': '1'}"), "/w/.vscode/launch.json")
    assert analysis.render is not None
    assert analysis.render({0: REPLACE}) == config("{'NEURON_RT_STOCHASTIC_ROUNDING_EN': '1'}")


@pytest.mark.parametrize(
    "extra, target, problem",
    [
        ("", ("script", "/w/train.py"), None),
        ('      "cwd": "${workspaceFolder}/src",\n', ("script", "/w/train.py"), None),  # program is absolute
        ('      "module": "pkg.train",\n', ("script", "/w/train.py"), None),  # program wins when both are given
    ],
)
def test_the_launch_of_a_configuration(extra, target, problem):
    analysis = analyze("vscode", config('{"XLA_USE_BF16": "1"}', extra), "/w/.vscode/launch.json")
    (launch,) = analysis.launches
    assert launch.target is not None
    assert (str(launch.target[0]), launch.target[1]) == target and launch.problem == problem
    assert launch.reached_by == {0: True}


def test_module_and_args_and_other_debuggers():
    text = json.dumps(
        {
            "configurations": [
                {"type": "debugpy", "request": "launch", "module": "pkg.train", "args": ["--steps", "3"]},
                {"type": "python", "request": "launch", "program": "run.py", "args": "--lr 0.1", "cwd": "tools"},
                {"type": "node", "request": "launch", "program": "x.js", "env": {"XLA_USE_BF16": "1"}},
                {"type": "debugpy", "request": "attach", "env": {"XLA_USE_BF16": "1"}},
            ]
        }
    )
    analysis = analyze("vscode", text, "/w/.vscode/launch.json")
    targets = [launch.target for launch in analysis.launches]
    assert all(t is not None for t in targets)
    assert [(str(t[0]), t[1], launch.args) for t, launch in zip(targets, analysis.launches) if t is not None] == [
        ("module", "pkg.train", ["--steps", "3"]),
        ("script", "/w/tools/run.py", ["--lr", "0.1"]),
    ]
    assert [launch.reached_by for launch in analysis.launches] == [{}, {}]  # the two entries reach no Python


def test_a_file_that_is_not_json_with_comments_is_one_line_error():
    with pytest.raises(CarrierError) as exc:
        analyze("vscode", '{"configurations": [ {"env": {"XLA_USE_BF16": "1" "A": 2}} ]}\n', "l/launch.json")
    assert str(exc.value).startswith("l/launch.json:1:") and "\n" not in str(exc.value)
    assert analyze("vscode", "[" * 5000 + "]" * 5000, "l/launch.json").entries == []  # deep: read, no traceback


def test_env_file_and_unresolvable_program(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / ".vscode").mkdir()
    (tmp_path / "bf16.env").write_text("XLA_USE_BF16=1\n")
    launch = {
        "version": "0.2.0",
        "configurations": [
            {
                "name": "train",
                "type": "debugpy",
                "request": "launch",
                "program": "train.py",
                "envFile": "${workspaceFolder}/bf16.env",
            },
            {
                "name": "file",
                "type": "debugpy",
                "request": "launch",
                "program": "${file}",
                "env": {"XLA_USE_BF16": "1"},
            },
        ],
    }
    (tmp_path / ".vscode" / "launch.json").write_text(json.dumps(launch, indent=4) + "\n")
    outcome = migrate_paths([tmp_path], "amp", write=True)
    assert outcome.errors == []
    assert (tmp_path / "bf16.env").read_text() == ""
    assert 'torch.autocast("xla"' in (tmp_path / "train.py").read_text()
    found = {(Path(d.path).name, d.code) for d in outcome.diagnostics}
    assert ("launch.json", "BFM111") in found and ("bf16.env", "BFM001") in found
    assert json.loads((tmp_path / ".vscode" / "launch.json").read_text()) == launch  # the kept one as it was


def test_a_noqa_comment_keeps_the_launch_json_as_it_is(tmp_path):
    from bf16_migrate.suppress import noqa_comments

    text = config('{\n        "XLA_USE_BF16": "1", // noqa: BFM001\n        "A": "// noqa in a string"\n      }')
    (noqa,) = noqa_comments(text, "vscode")
    assert (noqa.line, noqa.codes) == (9, frozenset({"BFM001"}))
