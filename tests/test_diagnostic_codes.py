"""Every code of the catalogue is produced by a test: the codes no other test asserted (BFM011,
BFM021, BFM070, BFM110, BFM132) are produced here from small inputs that really trigger them,
with their messages as the catalogue's templates word them; a last test checks that every code
of rules/diagnostics*.toml is named by some test or golden."""

from __future__ import annotations

import re
import string
import textwrap
from pathlib import Path

import pytest

from bf16_migrate.project import migrate_paths
from bf16_migrate.python import migrate_source
from bf16_migrate.rules import load_rules

from conftest import ROOT

HEADER = "import os\nimport torch\nimport torch_xla\n"

TRAIN = HEADER + textwrap.dedent(
    """
    def main():
        device = torch_xla.device()
        model = Net().to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x = torch.randn(8, 4).to(device)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    """
)


def findings(result):
    return [(d.code, d.fixed, d.message) for d in result.diagnostics]


def test_bfm011_optimizer_over_a_module_made_by_a_call_is_left_with_the_switch():
    """Two models by name are each cast (tests/test_codemod.py); one made by a call among them has
    no name to cast: the switch stays."""
    src = HEADER + textwrap.dedent(
        """
        os.environ["XLA_USE_BF16"] = "1"
        encoder = Encoder()
        opt = torch.optim.SGD(list(encoder.parameters()) + list(make_decoder().parameters()), lr=0.1)
        """
    )
    result = migrate_source(src, "stochastic", "t.py")
    assert result.code == src
    message = (
        "the optimizer's parameters do not come from one `<model>.parameters()`; the switch is "
        "left in place: cast each model by hand before the optimizer is built"
    )
    assert ("BFM011", False, message) in findings(result)
    assert result.diagnostics[-1].line == 7  # at the optimizer


def test_bfm021_amp_model_never_called_keeps_the_switch():
    src = HEADER + textwrap.dedent(
        """
        os.environ["XLA_USE_BF16"] = "1"
        model = Net()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        fit(model, optimizer)
        """
    )
    result = migrate_source(src, "amp", "t.py")
    assert result.code == src
    assert [(d.code, d.line, d.fixed) for d in result.diagnostics] == [("BFM033", 5, False), ("BFM021", 7, False)]
    assert (
        result.diagnostics[1].message == "`model` is never called in this file: wrap its forward pass and loss in "
        'torch.autocast("xla", dtype=torch.bfloat16) where it is called'
    )
    assert "(see BFM021 at line 7)" in result.diagnostics[0].message


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _outcome(tree: Path, mode: str = "stochastic"):
    outcome = migrate_paths([tree], mode, write=False)
    return [(Path(d.path).name, d.line, d.code, d.fixed, d.message) for d in outcome.diagnostics]


def test_bfm070_launcher_keeps_its_own_stochastic_rounding_setting(tmp_path):
    tree = _tree(
        tmp_path,
        {
            "run.sh": "#!/bin/bash\nexport NEURON_RT_STOCHASTIC_ROUNDING_EN=0\n"
            "export XLA_USE_BF16=1\npython train.py\n",
            "train.py": TRAIN,
        },
    )
    found = _outcome(tree)
    assert (
        "run.sh",
        3,
        "BFM070",
        True,
        "XLA_USE_BF16 removed; NEURON_RT_STOCHASTIC_ROUNDING_EN is already set here and kept as "
        "it is: check its value (1 reproduces the legacy switch on Neuron)",
    ) in found
    assert ("train.py", 1, "BFM001", True) in [f[:4] for f in found]
    outcome = migrate_paths([tree], "stochastic", write=True)
    assert not outcome.errors
    assert (tree / "run.sh").read_text() == "#!/bin/bash\nexport NEURON_RT_STOCHASTIC_ROUNDING_EN=0\npython train.py\n"


def test_bfm110_setting_that_starts_no_script_is_kept(tmp_path):
    tree = _tree(tmp_path, {"env.sh": "#!/bin/bash\nexport XLA_USE_BF16=1\n"})
    assert _outcome(tree) == [
        (
            "env.sh",
            2,
            "BFM110",
            False,
            "XLA_USE_BF16 kept: XLA_USE_BF16 reaches no Python script of the tree that uses "
            "torch (no launch found after it, or the launch is elsewhere)",
        )
    ]


def test_bfm132_launcher_reading_the_variable_is_reported(tmp_path):
    tree = _tree(
        tmp_path,
        {"run.sh": '#!/bin/bash\nif [ "$XLA_USE_BF16" = 1 ]; then BATCH=64; fi\npython train.py\n', "train.py": TRAIN},
    )
    found = _outcome(tree)
    assert [f for f in found if f[2] == "BFM132"] == [
        (
            "run.sh",
            2,
            "BFM132",
            False,
            "XLA_USE_BF16 is read here; once it is no longer set the read no longer tells "
            "whether bf16 is on: test the precision your script uses instead",
        )
    ]


JOB = """apiVersion: batch/v1
kind: Job
spec:
  template:
    spec:
      containers:
        - name: train
          command: ["python", "train.py"]
          env:
{env}
"""


@pytest.mark.parametrize(
    "files, where, code",
    [
        (
            {".env": "XLA_USE_BF16=$BF16\n", "run.sh": "#!/bin/bash\nset -a; . ./.env; set +a\npython train.py\n"},
            (".env", 1),
            "BFM130",
        ),
        (
            {".env": 'XLA_USE_BF16="1\n"\n', "run.sh": "#!/bin/bash\nset -a; . ./.env; set +a\npython train.py\n"},
            (".env", 1),
            "BFM131",
        ),
        (
            {
                "job.yaml": JOB.format(
                    env="            - name: XLA_USE_BF16\n"
                    "              valueFrom: {configMapKeyRef: {name: c, key: "
                    "k}}"
                )
            },
            ("job.yaml", 10),
            "BFM130",
        ),
        (
            {
                "job.yaml": JOB.format(
                    env="            - {name: XLA_USE_BF16, valueFrom: {configMapKeyRef: {name: c, key: k}}}"
                )
            },
            ("job.yaml", 10),
            "BFM131",
        ),
    ],
    ids=["dotenv-computed", "dotenv-multiline", "yaml-valueFrom", "yaml-flow-style-first"],
)
def test_bfm130_for_a_computed_value_bfm131_for_another_form(tmp_path, files, where, code):
    """The carrier says which: a computed value (``$BF16``, ``valueFrom``) is BFM130, any other
    form it does not rewrite BFM131 (a flow-style item is reported as such even when its value
    is computed too); the setting is kept either way."""
    tree = _tree(tmp_path, {"train.py": TRAIN, **files})
    found = [f for f in _outcome(tree) if f[2] in ("BFM130", "BFM131")]
    assert [(f[0], f[1], f[2], f[3]) for f in found] == [(*where, code, False)], found


def test_every_catalogue_code_is_produced_by_some_test():
    """A code of the catalogue named by no test and no golden is either untested or dead."""
    texts = [p.read_text() for p in (ROOT / "tests").glob("*.py") if p.name != Path(__file__).name]
    texts += [p.read_text() for p in (ROOT / "fixtures").rglob("diagnostics.txt")]
    texts.append(Path(__file__).read_text().split("def test_every_catalogue_code_is_produced_by_some_test")[0])
    named = set(re.findall(r"BFM\d{3}", "\n".join(texts)))
    assert sorted(set(load_rules().diagnostics) - named) == []


def _pattern(template: str) -> str:
    """``template`` as a regular expression, each field any text."""
    out = []
    for text, name, _spec, _conversion in string.Formatter().parse(template):
        out.append(re.escape(text))
        if name is not None:
            out.append(".*?")
    return "".join(out)


FINDING = re.compile(
    r"^\S+?:\d+:\d+: (BFM\d{3}) (?:cell \d+, line \d+, col \d+: )?(.*?)( \[fixed\])?$"
)  # a notebook cell's place first


def test_every_golden_message_is_worded_by_its_template():
    """Every finding of the goldens (the codemod's, the carriers', the project's) is worded by
    its code's template or one of its variants in the catalogue: the templates are what the
    tool says, not a second description of it."""
    rules = load_rules().diagnostics
    patterns = {
        code: re.compile("|".join(f"(?:{_pattern(t)})" for t in [rule.message, *rule.variants.values()]) + r"\Z", re.S)
        for code, rule in rules.items()
    }
    unworded = []
    for path in sorted((ROOT / "fixtures").rglob("diagnostics.txt")):
        for line in path.read_text().splitlines():
            found = FINDING.match(line)
            if found is None:
                continue
            code, message, fixed = found.groups()
            if not patterns[code].match(message):
                unworded.append(f"{path.relative_to(ROOT)}: {line}")
            if fixed:
                assert rules[code].fixable, line
    assert unworded == []


# The rule pages whose example is a whole legacy statement of a script: the example, under the
# usual imports, produces its own code (the other pages' examples are fragments of a larger
# script, a launcher or a command line).
SELF_CONTAINED_EXAMPLES = [
    ("BFM002", "stochastic"),
    ("BFM003", "stochastic"),
    ("BFM010", "stochastic"),
    ("BFM011", "stochastic"),
    ("BFM021", "amp"),
    ("BFM040", "stochastic"),
    ("BFM041", "stochastic"),
    ("BFM042", "stochastic"),
    ("BFM043", "stochastic"),
    ("BFM044", "stochastic"),
    ("BFM045", "stochastic"),
    ("BFM046", "stochastic"),
    ("BFM047", "stochastic"),
    ("BFM049", "stochastic"),
    ("BFM050", "stochastic"),
    ("BFM052", "stochastic"),
    ("BFM017", "gpu-compatible"),
    ("BFM080", "stochastic"),
    ("BFM081", "stochastic"),
    ("BFM082", "stochastic"),
    ("BFM083", "stochastic"),
    ("BFM084", "gpu-compatible"),
    ("BFM085", "stochastic"),
    ("BFM086", "stochastic"),
    ("BFM087", "stochastic"),
    ("BFM088", "stochastic"),
    ("BFM089", "stochastic"),
    ("BFM170", "stochastic"),
]


@pytest.mark.parametrize("code, mode", SELF_CONTAINED_EXAMPLES, ids=[c for c, _ in SELF_CONTAINED_EXAMPLES])
def test_a_rule_pages_example_produces_its_code(code, mode):
    example = load_rules().diagnostics[code].example
    result = migrate_source(HEADER + "import torch_xla.core.xla_model as xm\n" + example + "\n", mode, "t.py")
    assert code in {d.code for d in result.diagnostics}, [(d.code, d.message) for d in result.diagnostics]
