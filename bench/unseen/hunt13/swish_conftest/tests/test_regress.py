import train_swish


def test_loss_goes_down():
    out = train_swish.main(["--steps", "20"])
    assert out["loss"][-1] < out["loss"][0]
