import numpy as np

from kpi.train_lib import make_series, predict, train


def test_loss_goes_down(model, device):
    losses = train(model, device, steps=12)
    print("\nlosses", [round(v, 4) for v in losses])
    assert np.mean(losses[-4:]) < np.mean(losses[:4])


def test_predict_is_float32_numpy(model, device):
    train(model, device, steps=4)
    out = predict(model, device, make_series(n=60, seed=3))
    w = next(model.parameters())
    print("\nDTYPES weight", w.dtype, "predict", out.dtype, out.shape)
    assert out.dtype == np.float32
    assert out.shape == (46,)


def test_predict_is_finite(model, device):
    out = predict(model, device, make_series(n=30, seed=4))
    assert np.isfinite(out).all()
