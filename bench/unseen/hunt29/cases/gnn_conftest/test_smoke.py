import train_gnn


def test_trains_a_few_steps(tmp_path):
    acc = train_gnn.main(["--steps", "4", "--out", str(tmp_path)])
    assert 0.0 <= acc <= 1.0
