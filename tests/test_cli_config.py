"""[tool.bf16-migrate] in pyproject.toml: discovery upward from the paths' common parent, each
key, the command line winning, and one-line errors naming the file."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.config import ConfigError, find_config, load_config

from conftest import FIXTURES

SCRIPT = (FIXTURES / "mlp_regression" / "train.py").read_text()


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def make_tree(tmp_path, config: str):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.bf16-migrate]\n{config}")
    (root / "src" / "train.py").write_text(SCRIPT)
    return root


def codes(result):
    return sorted({d["code"] for d in json.loads(result.stdout)["diagnostics"]})


def test_found_upward_from_the_common_parent(tmp_path):
    root = make_tree(tmp_path, 'mode = "amp"\n')
    (root / "src" / "pyproject.toml").write_text("[project]\nname = 'inner'\n")  # no table: passed over
    assert find_config(root / "src") == root / "pyproject.toml"
    assert load_config([root / "src" / "train.py"]).mode == "amp"
    assert load_config([tmp_path]).path is None


def test_mode_from_config_and_command_line_wins(tmp_path):
    root = make_tree(tmp_path, 'mode = "amp"\n')
    result = invoke(root / "src", "--diff")
    assert "torch.autocast" in result.stdout
    result = invoke(root / "src", "--diff", "--mode", "stochastic")
    assert "torch.autocast" not in result.stdout and "NEURON_RT_STOCHASTIC_ROUNDING_EN" in result.stdout


def test_select_and_ignore_from_config(tmp_path):
    root = make_tree(tmp_path, 'ignore = ["BFM09"]\n')
    assert codes(invoke(root / "src", "--check", "--json")) == ["BFM001"]
    # the command line replaces the configuration's list
    assert codes(invoke(root / "src", "--check", "--json", "--ignore", "BFM001")) == ["BFM091"]
    root2 = make_tree(tmp_path / "b", 'select = ["BFM091"]\n')
    assert codes(invoke(root2 / "src", "--check", "--json")) == ["BFM091"]


def test_exclude_and_extend_exclude(tmp_path):
    root = make_tree(tmp_path, 'exclude = ["train.py"]\n')
    (root / "src" / "other.py").write_text(SCRIPT)
    paths = lambda r: sorted({d["path"].rsplit("/", 1)[-1] for d in json.loads(r.stdout)["diagnostics"]})  # noqa: E731
    assert paths(invoke(root, "--check", "--json")) == ["other.py"]
    # --exclude on the command line replaces exclude
    assert paths(invoke(root, "--check", "--json", "--exclude", "other.py")) == ["train.py"]
    root2 = make_tree(tmp_path / "b", 'extend-exclude = ["other.py"]\n')
    (root2 / "src" / "other.py").write_text(SCRIPT)
    assert paths(invoke(root2, "--check", "--json", "--exclude", "nothing")) == ["train.py"]


def test_legacy_env_from_config(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.bf16-migrate]\nlegacy-env = {XLA_USE_BF16 = "1"}\n')
    script = root / "train.py"
    script.write_text(SCRIPT.replace('os.environ["XLA_USE_BF16"] = "1"\n', ""))
    result = invoke(script, "--diff")
    assert "+    model.to(torch.bfloat16)" in result.stdout, result.output
    (root / "pyproject.toml").write_text('[tool.bf16-migrate]\nlegacy-env = ["XLA_USE_BF16=1"]\n')
    assert "+    model.to(torch.bfloat16)" in invoke(script, "--diff").stdout


def test_output_format_from_config(tmp_path):
    root = make_tree(tmp_path, 'output-format = "json"\n')
    assert json.loads(invoke(root / "src", "--check").stdout)["schema"] == 1


@pytest.mark.parametrize(
    "config, message",
    [
        ("mdoe = 'amp'\n", "unknown key 'mdoe' in [tool.bf16-migrate]"),
        ("mode = 'fp8'\n", "[tool.bf16-migrate] mode = 'fp8': not one of stochastic, gpu-compatible, amp"),
        ("mode = 3\n", "[tool.bf16-migrate] mode: expected a string"),
        ("exclude = 'x'\n", "[tool.bf16-migrate] exclude: expected a list of strings"),
        ("select = ['XYZ']\n", "[tool.bf16-migrate] select: XYZ: no diagnostic code starts with it"),
        ("legacy-env = ['XLA_USE_BF16']\n", "[tool.bf16-migrate] legacy-env: expected KEY=VALUE"),
        ("legacy-env = {PJRT_DEVICE = 'CPU'}\n", "[tool.bf16-migrate] legacy-env: PJRT_DEVICE: not a legacy variable"),
        ("force-exclude = 'yes'\n", "[tool.bf16-migrate] force-exclude: expected true or false"),
        ("mode = \n", "cannot be read as TOML"),
    ],
)
def test_bad_config_is_one_line_naming_the_file(tmp_path, config, message):
    root = make_tree(tmp_path, config)
    result = invoke(root / "src", "--check")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"error: {root / 'pyproject.toml'}: ") and message in result.stderr, result.stderr


def test_unknown_key_raises_config_error(tmp_path):
    root = make_tree(tmp_path, "colour = true\n")
    with pytest.raises(ConfigError, match="unknown key 'colour'"):
        load_config([root])


def test_explicit_config_file(tmp_path):
    root = make_tree(tmp_path, "")
    other = tmp_path / "ci.toml"
    other.write_text('[tool.bf16-migrate]\nmode = "amp"\n')
    assert "torch.autocast" in invoke(root / "src", "--diff", "--config", other).stdout
