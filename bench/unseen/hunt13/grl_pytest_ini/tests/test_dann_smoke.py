import train_dann


def test_short_run(tmp_path):
    hist = train_dann.main(["--steps", "16", "--out", str(tmp_path)])
    assert len(hist["loss"]) == 16
    assert hist["best_val"] <= hist["val"][0]
