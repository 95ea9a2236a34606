import train


def test_loss_goes_down():
    losses = train.main(steps=10)
    assert losses[-1] < losses[0]
