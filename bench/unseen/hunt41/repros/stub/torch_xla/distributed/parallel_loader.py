"""hunt20 stub addition: MpDeviceLoader / ParallelLoader move each batch to the device as it is (no dtype change),
which is what torch_xla's loader does (it calls xm.send_cpu_data_to_device)."""
import torch


def _to(data, device):
    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, dict):
        return {k: _to(v, device) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_to(v, device) for v in data)
    return data


class MpDeviceLoader:
    def __init__(self, loader, device, **kwargs):
        self._loader, self._device = loader, device

    def __iter__(self):
        for batch in self._loader:
            yield _to(batch, self._device)

    def __len__(self):
        return len(self._loader)
