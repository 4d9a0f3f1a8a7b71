"""The products of the kernel's float filter on a torch device (a GPU where present).

The kernel's witness check (:func:`lnproofs.kernel.check_witnesses`) bounds the error of its float
products ``S = K Q^T`` by a theorem that holds for any order of summation (module docstring of
``lnproofs/kernel/checker.py``; ``docs/trust.md``), and takes the product as an argument of the keys
(:class:`lnproofs.kernel.ExactKeys`'s ``matmul``).  :class:`DeviceMatmul` is such a product: it takes
numpy float32 or float64 arrays, multiplies them in float64 on its device and returns a float64
numpy array.  Float32 numbers are exact doubles, so a float64 product of float32 keys obeys the
float64 bound, which is far inside the float32 one the kernel then applies; and float64 is never
touched by TF32 or reduced-precision reductions, so no global torch setting is read or changed.
The filter only accepts; every pair it does not settle is decided in integers, so the verdicts are
the same with this product as with numpy's.

The keys are sent to the device once and kept there (the last two arrays multiplied from the left,
held with their host arrays, which the kernel never changes): a check multiplies the same keys by
block after block of queries.
"""

from __future__ import annotations

import numpy as np
import torch

from .device import resolve_device

__all__ = ["DeviceMatmul", "filter_matmul"]


class DeviceMatmul:
    """``A @ B`` in float64 on ``device`` (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``), as numpy.

    Picklable: a copy (e.g. on another worker) holds the device's name and builds its own cache."""

    def __init__(self, device="cuda"):
        self.device = resolve_device(device)
        self._held: list[tuple[tuple, np.ndarray, torch.Tensor]] = []  # (where A lies, A, A on the device)

    def __getstate__(self) -> dict:
        return {"device": str(self.device)}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["device"])

    def __repr__(self) -> str:
        return f"DeviceMatmul({str(self.device)!r})"

    def _on_device(self, A: np.ndarray) -> torch.Tensor:
        """``A`` as a float64 tensor on the device, sent once for each array of the same memory."""
        where = (A.__array_interface__["data"][0], A.shape, A.strides, A.dtype.str)
        for key, _, tensor in self._held:
            if key == where:
                return tensor
        tensor = self._send(A)
        self._held = [*self._held[-1:], (where, A, tensor)]
        return tensor

    def _send(self, A: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.array(A, copy=True, order="C")).to(self.device).to(torch.float64)

    def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
            raise ValueError(f"cannot multiply arrays of shapes {A.shape} and {B.shape}")
        if A.shape[1] == 0:  # nothing to sum: torch's empty product is zeros as well, without a transfer
            return np.zeros((A.shape[0], B.shape[1]))
        product = self._on_device(A) @ self._send(B)
        return product.cpu().numpy()


def filter_matmul(device="cpu") -> DeviceMatmul | None:
    """The float filter's product for a ``--device`` option: None (numpy's) for ``"cpu"``, and for
    ``"auto"`` on a machine without a CUDA GPU; else a :class:`DeviceMatmul` on the device (a
    device torch does not see is refused with one line, :func:`.device.resolve_device`)."""
    dev = resolve_device(device)
    return None if dev.type == "cpu" else DeviceMatmul(dev)
