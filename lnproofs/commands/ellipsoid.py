"""``lnproofs ellipsoid``: centre, normal, principal axes and semi-axes of a LayerNorm's image."""

from __future__ import annotations

import json

__all__ = ["configure", "run"]


def configure(parser) -> None:
    parser.add_argument("--gain", required=True, metavar="G", help="1-D gain vector (.npy, .npz, .pt or .safetensors)")
    parser.add_argument("--bias", default=None, metavar="B", help="1-D bias vector of the same length (default 0)")
    parser.add_argument(
        "--json", action="store_true", help='print {"center", "normal", "semi_axes", "axes", "dimension", ...} as JSON'
    )


def _fmt(values, limit=8) -> str:
    shown = ", ".join(f"{v:.6g}" for v in values[:limit])
    more = f", ... ({len(values)} in all)" if len(values) > limit else ""
    return f"[{shown}{more}]"


#: non-zero gains of size 2**-GAIN_BITS .. 2**GAIN_BITS: their squares and the semi-axes stay floats
GAIN_BITS = 500


def _check_range(gain) -> None:
    """One line for a non-zero gain whose square would leave the float range (the axes are floats)."""
    import numpy as np

    from ..kernel import OptionError

    size = np.abs(np.asarray(gain, dtype=np.float64))
    far = np.flatnonzero((size != 0) & ((size < 2.0**-GAIN_BITS) | (size > 2.0**GAIN_BITS)))
    if far.size:
        i = int(far[0])
        raise OptionError(
            f"--gain entry {i} is {float(gain[i]):g}; the axes are computed in floats for non-zero "
            f"gains of size 2^-{GAIN_BITS}..2^{GAIN_BITS} (about 3e-151..3e150): scale the gain by a "
            "power of two (the semi-axes scale with it, the normal does not change)"
        )


def run(args) -> int:
    from ..derive.numeric import ellipsoid
    from ..io.arrays import load_array

    gain = load_array(args.gain, name="gain", ndim=1)
    bias = None if args.bias is None else load_array(args.bias, name="bias", ndim=1)
    _check_range(gain)
    info = ellipsoid(gain, bias)
    if args.json:
        print(json.dumps(info.to_json(), allow_nan=False))
        return 0
    n = info.n
    print(f"width n = {n}; image of LayerNorm with eps = 0")
    print(f"centre (bias): {_fmt(info.center)}")
    if info.normal is not None:
        print(f"hyperplane normal (unit, along 1/a): {_fmt(info.normal)}")
    if info.constant_coordinates:
        idx = ", ".join(str(i) for i in info.constant_coordinates[:20])
        more = " ..." if len(info.constant_coordinates) > 20 else ""
        print(f"constant coordinates (gain 0, z_i = b_i): {idx}{more}")
    kind = "sphere" if info.is_sphere else "ellipsoid"
    print(f"dimension: {info.dimension} ({kind}; number of semi-axes)")
    print(f"semi-axes (descending): {_fmt(info.semi_axes)}")
    return 0
