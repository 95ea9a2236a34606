import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parents[1]


def test_selector_smoke(tmp_path):
    r = subprocess.run([sys.executable, str(HERE / "select_features.py"), "--steps", "12", "--out", str(tmp_path)],
                       check=True, capture_output=True, text=True)
    assert "selected" in r.stdout
    assert (tmp_path / "selection.npz").exists()
