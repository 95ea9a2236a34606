"""Property: a carrier edit touches the legacy entry and nothing else.

A deterministic generator (seeded, no extra dependency) builds files of each carrier kind from
random unrelated content (comments, other variables, quoting, continuations, heredocs, non-ASCII
text, blank lines) around one legacy entry of a random shape. The file is rendered with the
entry replaced (stochastic mode) or removed (gpu-compatible/amp); the result must be exactly the
same blocks with only the entry's block changed, as the shape's expected text says.
"""

from __future__ import annotations

import random

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from bf16_migrate.carriers import analyze
from bf16_migrate.carriers.model import REMOVE, REPLACE

N = 120
SR = "NEURON_RT_STOCHASTIC_ROUNDING_EN"
WORDS = ["alpha", "beta", "é", "über", "x=1", "$HOME", "'q'", '"dq"', "a\\b", "#", "--flag", "NOT_XLA_USE_BF16_X"]


def _words(rng, n=4):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, n)))


def _check(kind, blocks, entry_index, decision, path):
    text = "".join(b[0] for b in blocks)
    analysis = analyze(kind, text, path)
    entries = [e for e in analysis.entries if e.problem is None]
    assert len(entries) == 1, (text, analysis.entries)
    pick = 1 if decision == REPLACE else 2
    expected = "".join(b[pick] if k == entry_index else b[0] for k, b in enumerate(blocks))
    render = analysis.render
    assert render is not None
    if kind == "notebook":
        assert analysis.python is not None
        out = render({entries[0].id: decision}, analysis.python.source)
    else:
        out = render({entries[0].id: decision})
    assert out == expected, text


# -- shell --------------------------------------------------------------------------------------------
def _shell_filler(rng) -> str:
    k = rng.randrange(9)
    if k == 0:
        return f"# {_words(rng)}\n"
    if k == 1:
        return f"echo \"{rng.choice(['hi', 'é ü', 'a b'])}\" '{rng.choice(['x', '$y'])}'\n"
    if k == 2:
        return f"export OTHER_{rng.randrange(99)}={rng.randrange(9)}\n"
    if k == 3:
        return "\n" if rng.random() < 0.5 else "   \n"
    if k == 4:
        return 'if [ -n "$A" ]; then\n  echo a\nfi\n'
    if k == 5:
        return "cat <<'EOT'\nsome text XLA stuff\nEOT\n"
    if k == 6:
        return "python tools.py --x 1 \\\n  --y 2\n"
    if k == 7:
        return f"FOO_{rng.randrange(9)}=bar; cd /tmp\n"
    return "run() {\n  echo inside\n}\n"


def _shell_entry(rng):
    ind = rng.choice(["", "  "])
    shapes = [
        (f"{ind}export XLA_USE_BF16=1\n", f"{ind}export {SR}=1\n", ""),
        (f'{ind}export XLA_DOWNCAST_BF16="1" KEEP=2\n', f'{ind}export {SR}="1" KEEP=2\n', f"{ind}export KEEP=2\n"),
        (
            f"{ind}XLA_USE_BF16=1 python src/train.py --steps 3\n",
            f"{ind}{SR}=1 python src/train.py --steps 3\n",
            f"{ind}python src/train.py --steps 3\n",
        ),
        (
            f"{ind}env XLA_USE_BF16='1' python3 -u src/train.py\n",
            f"{ind}env {SR}='1' python3 -u src/train.py\n",
            f"{ind}env python3 -u src/train.py\n",
        ),
        (
            f"{ind}time XLA_USE_BF16=1 \\\n  torchrun --nproc_per_node=2 src/train.py\n",
            f"{ind}time {SR}=1 \\\n  torchrun --nproc_per_node=2 src/train.py\n",
            f"{ind}time torchrun --nproc_per_node=2 src/train.py\n",
        ),
        (
            f"{ind}docker run --rm -e XLA_USE_BF16=1 img python src/train.py\n",
            f"{ind}docker run --rm -e {SR}=1 img python src/train.py\n",
            f"{ind}docker run --rm img python src/train.py\n",
        ),
        (f"{ind}cd /w; export XLA_USE_BF16=1\n", f"{ind}cd /w; export {SR}=1\n", f"{ind}cd /w\n"),
    ]
    return rng.choice(shapes)


@pytest.mark.parametrize("decision", [REPLACE, REMOVE])
def test_shell_edits_only_the_entry(decision):
    rng = random.Random(1000 + (decision == REMOVE))
    for _ in range(N):
        blocks = [("#!/bin/bash\n",) * 3] + [(s, s, s) for s in (_shell_filler(rng) for _ in range(rng.randint(0, 8)))]
        at = rng.randint(1, len(blocks))
        blocks.insert(at, _shell_entry(rng))
        blocks += [(s, s, s) for s in (_shell_filler(rng) for _ in range(rng.randint(0, 5)))]
        _check("shell", blocks, at, decision, "gen.sh")


# -- .env ------------------------------------------------------------------------------------------------
def _dotenv_filler(rng) -> str:
    return rng.choice(
        [
            f"# {_words(rng)}\n",
            f"KEY_{rng.randrange(99)}=value\n",
            "export K=v\n",
            "Q='a b # not a comment'\n",
            "\n",
            'D="x\\"y"\n',
            "NOT_XLA_USE_BF16=1\n",
        ]
    )


@pytest.mark.parametrize("decision", [REPLACE, REMOVE])
def test_dotenv_edits_only_the_entry(decision):
    rng = random.Random(2000 + (decision == REMOVE))
    shapes = [
        ("XLA_USE_BF16=1\n", f"{SR}=1\n", ""),
        ('XLA_USE_BF16="1"  # on\n', f'{SR}="1"  # on\n', ""),
        ("export XLA_DOWNCAST_BF16='1'\n", f"export {SR}='1'\n", ""),
        ("  XLA_USE_BF16 = 1\n", f"  {SR} = 1\n", ""),
    ]
    for _ in range(N):
        blocks = [(s, s, s) for s in (_dotenv_filler(rng) for _ in range(rng.randint(0, 8)))]
        at = rng.randint(0, len(blocks))
        blocks.insert(at, rng.choice(shapes))
        _check("dotenv", blocks, at, decision, ".env")


# -- Dockerfile -------------------------------------------------------------------------------------------
def _docker_filler(rng) -> str:
    return rng.choice(
        [
            "RUN echo hi\n",
            f"# {_words(rng)}\n",
            "WORKDIR /w\n",
            "COPY . /w\n",
            "ENV A=1 B='two words'\n",
            "LABEL x=y\n",
            "RUN apt-get update && \\\n    apt-get install -y curl\n",
            "\n",
            "ENV OLD style value\n",
        ]
    )


@pytest.mark.parametrize("decision", [REPLACE, REMOVE])
def test_dockerfile_edits_only_the_entry(decision):
    rng = random.Random(3000 + (decision == REMOVE))
    shapes = [
        ("ENV XLA_USE_BF16=1\n", f"ENV {SR}=1\n", ""),
        ("ENV A=1 \\\n    XLA_USE_BF16=1\n", f"ENV A=1 \\\n    {SR}=1\n", "ENV A=1\n"),
        ('ENV XLA_USE_BF16="1" \\\n    B=2\n', f'ENV {SR}="1" \\\n    B=2\n', "ENV B=2\n"),
        ("ENV XLA_DOWNCAST_BF16 1\n", f"ENV {SR} 1\n", ""),
        ("RUN XLA_USE_BF16=1 python src/train.py\n", f"RUN {SR}=1 python src/train.py\n", "RUN python src/train.py\n"),
    ]
    for _ in range(N):
        blocks = [("FROM python:3.11 AS base\n",) * 3] + [
            (s, s, s) for s in (_docker_filler(rng) for _ in range(rng.randint(0, 6)))
        ]
        at = rng.randint(1, len(blocks))
        blocks.insert(at, rng.choice(shapes))
        blocks += [(s, s, s) for s in (_docker_filler(rng) for _ in range(rng.randint(0, 3)))]
        blocks.append(('CMD ["python", "src/train.py"]\n',) * 3)
        _check("dockerfile", blocks, at, decision, "Dockerfile")


# -- YAML ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("decision", [REPLACE, REMOVE])
def test_yaml_env_list_edits_only_the_entry(decision):
    rng = random.Random(4000 + (decision == REMOVE))
    for _ in range(N):
        head = (
            "# job\napiVersion: batch/v1\nkind: Job\nspec:\n  containers:\n"
            '    - name: t   # main\n      command: ["python", "src/train.py"]\n      env:\n'
        )
        blocks = [(head,) * 3]
        for _ in range(rng.randint(1, 4)):
            s = rng.choice(
                [
                    f'        - name: OTHER_{rng.randrange(99)}\n          value: "{rng.choice(["a", "é", "#x"])}"\n',
                    f"        # {_words(rng)}\n",
                    "        - {name: FLOW, value: x}\n",
                    "        - name: FROM_SECRET\n          valueFrom:\n            secretKeyRef: {name: s, key: k}\n",
                ]
            )
            blocks.append((s, s, s))
        at = rng.randint(1, len(blocks))
        q = rng.choice(['"', "'"])
        blocks.insert(
            at,
            (
                f"        - name: XLA_USE_BF16   # legacy\n          value: {q}1{q}  # on\n",
                f"        - name: {SR}   # legacy\n          value: {q}1{q}  # on\n",
                "",
            ),
        )
        blocks.append(("        - name: LAST\n          value: z\n",) * 3)
        blocks.append(("  restartPolicy: Never\n",) * 3)
        _check("yaml", blocks, at, decision, "job.yaml")


@pytest.mark.parametrize("decision", [REPLACE, REMOVE])
def test_yaml_env_map_edits_only_the_entry(decision):
    rng = random.Random(5000 + (decision == REMOVE))
    for _ in range(N):
        blocks = [("services:\n  train:\n    command: python src/train.py\n    environment:\n",) * 3]
        keys = set()  # a mapping's keys are unique (YAML 1.2): a repeated one is an error, tested in test_carriers.py
        for _ in range(rng.randint(1, 4)):
            s = rng.choice(
                [f"      K{rng.randrange(99)}: v\n", f"      # {_words(rng)}\n", "      Q: 'a: b'\n", "      E: é\n"]
            )
            key = s.split(":")[0].strip()
            if not key.startswith("#") and key in keys:
                continue
            keys.add(key)
            blocks.append((s, s, s))
        at = rng.randint(1, len(blocks))
        value = rng.choice(["1", '"1"', "'1'", "true"])
        new = {"1": "1", '"1"': '"1"', "'1'": "'1'", "true": "1"}[value]
        blocks.insert(at, (f"      XLA_USE_BF16: {value}  # c\n", f"      {SR}: {new}  # c\n", ""))
        blocks.append(("      Z: last\n  other:\n    image: x\n",) * 3)
        _check("yaml", blocks, at, decision, "compose.yaml")


# -- notebooks -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("decision", [REPLACE, REMOVE])
def test_notebook_edits_only_the_entry_cell(decision):
    rng = random.Random(6000 + (decision == REMOVE))
    for _ in range(N // 4):
        cells = []
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.4:
                cells.append(new_markdown_cell(f"# {_words(rng)}"))
            else:
                cells.append(
                    new_code_cell(
                        f"x = {rng.randrange(9)}\nprint('{rng.choice(['é', 'a', 'XLA_USE_BF16_NOT'])}')",
                        execution_count=rng.randrange(9),
                        outputs=[new_output("stream", name="stdout", text="é\n")],
                    )
                )
        at = rng.randint(0, len(cells))
        before = rng.choice(["", "y = 2\n"])
        after = rng.choice(["", "\nprint(y)"])
        source = f"{before}%env XLA_USE_BF16=1{after}"
        cells.insert(at, new_code_cell(source))
        nb = new_notebook(cells=cells)
        text = nbformat.writes(nb)
        expect_replace = nbformat.writes(_with_source(nb, at, source.replace("XLA_USE_BF16", SR)))
        kept_lines = [line for line in source.split("\n") if not line.startswith("%env")]
        expect_remove = nbformat.writes(_with_source(nb, at, "\n".join(kept_lines)))
        _check("notebook", [(text, expect_replace, expect_remove)], 0, decision, "nb.ipynb")


def _with_source(nb, index, source):
    copy = nbformat.from_dict(nbformat.reads(nbformat.writes(nb), as_version=4))
    copy.cells[index].source = source
    return copy
