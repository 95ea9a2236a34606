from dataclasses import dataclass, field

import torch
import torch_xla.core.xla_model as xm


@dataclass
class State:
    step: int = 0
    lr: float = 0.0
    loss: torch.Tensor = None
    outputs: dict = field(default_factory=dict)
    grad_norms: torch.Tensor = None


def fire(callbacks, event, state):
    for cb in callbacks:
        getattr(cb, "on_" + event)(state)


def fit(model, opt, sched, batches, eval_batch, loss_fn, callbacks, eval_every, device):
    state = State()
    norms = []
    for step, (x, y) in enumerate(batches):
        state.step = step
        out = model(x.to(device))
        loss = loss_fn(out["scores"], y.to(device))
        opt.zero_grad()
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        xm.optimizer_step(opt)
        sched.step()
        xm.mark_step()
        state.loss, state.lr = loss.detach(), sched.get_last_lr()[0]
        fire(callbacks, "step_end", state)
        if (step + 1) % eval_every == 0:
            with torch.no_grad():
                state.outputs = model(eval_batch.to(device))
            fire(callbacks, "eval_end", state)
    state.grad_norms = torch.stack(norms)
    fire(callbacks, "train_end", state)
    return state
