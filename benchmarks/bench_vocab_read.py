"""Reading an output layer: peak memory and seconds of the chunked read against the whole-tensor read.

    python benchmarks/bench_vocab_read.py [--shapes 50000x256,qwen2] [--dtypes float32,bfloat16]
        [--rows 4096] [--note TEXT] [--out FILE]

For each shape and dtype a model folder is written to a temporary folder: ``config.json`` (a
Llama, untied) and the random unembedding (Gaussian, standard deviation 0.02) with the final
norm, in two safetensors shards named by ``model.safetensors.index.json`` (the unembedding alone in
the second).  Each road runs in a fresh Python process, which first reads a tiny folder (so the
modules a read loads are loaded), resets its peak resident size (``/proc/self/clear_refs``) and
then reads:

* ``chunks``: ``read_output_layer(folder, rows=ROWS)`` (``--rows``; 0 for the default, 64 MiB of
  float64 per chunk): the unembedding in chunks of rows, each a safetensors slice of its shard
  opened for it alone, into one float64 array;
* ``whole``: the unembedding as one tensor of its shard (``torch_backend.models.tensors.read_tensor``),
  widened to float64: the road before chunks.

Each row records the peak resident size above the baseline (``grown``), the float64 keys' bytes,
the file's bytes of the unembedding, one chunk's float64 bytes, wall and CPU seconds, and the load
average before and after.  Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SHAPES = {"qwen2": (151936, 896), "llama3": (128256, 4096)}

_READ = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from lnproofs.models.vocab import read_output_layer
from torch_backend.models.tensors import read_tensor
folder, road, rows = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
read_output_layer(sys.argv[5])
def status(field):
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field + ":"))
    return int(line.split()[1]) * 1024
Path("/proc/self/clear_refs").write_text("5")
before, wall, cpu = status("VmRSS"), time.perf_counter(), time.process_time()
if road == "chunks":
    keys = read_output_layer(folder, rows=rows or None).keys
else:
    index = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    keys = read_tensor(folder / index["lm_head.weight"], "lm_head.weight")
print(json.dumps({"grown": status("VmHWM") - before, "keys": keys.nbytes, "rows": keys.shape[0],
                  "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}))
"""


def shape_of(name: str) -> tuple[int, int]:
    if name in SHAPES:
        return SHAPES[name]
    n, d = (int(x) for x in name.lower().split("x"))
    return n, d


def write_folder(folder: Path, n: int, d: int, dtype: str) -> int:
    """A sharded Llama head of ``n x d`` in ``dtype``; the unembedding's bytes in its file."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "tie_word_embeddings": False}))
    kind = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)
    head = torch.empty((n, d), dtype=kind)
    for a in range(0, n, 8192):  # made in pieces: the benchmark itself stays small
        head[a : a + 8192] = (torch.randn((min(8192, n - a), d), generator=gen) * 0.02).to(kind)
    save_file({"model.norm.weight": torch.ones(d, dtype=kind)}, str(folder / "model-00001-of-00002.safetensors"))
    save_file({"lm_head.weight": head}, str(folder / "model-00002-of-00002.safetensors"))
    index = {
        "lm_head.weight": "model-00002-of-00002.safetensors",
        "model.norm.weight": "model-00001-of-00002.safetensors",
    }
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": index}))
    return head.numel() * head.element_size()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="50000x256,qwen2")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--rows", type=int, default=0, help="rows per chunk (0: the default, 64 MiB of float64)")
    parser.add_argument("--note", default="")
    parser.add_argument("--out", default=str(ROOT / "results" / "bench_vocab_read.json"))
    args = parser.parse_args(argv)
    rows_out = []
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny"
        write_folder(tiny, 16, 8, "float32")
        for shape in args.shapes.split(","):
            n, d = shape_of(shape)
            for dtype in args.dtypes.split(","):
                folder = Path(tmp) / f"{n}x{d}-{dtype}"
                file_bytes = write_folder(folder, n, d, dtype)
                chunk_rows = args.rows or max(1, (1 << 26) // (8 * d))
                for road in ("chunks", "whole"):
                    load = os.getloadavg()
                    done = subprocess.run(
                        [sys.executable, "-c", _READ, str(folder), road, str(args.rows), str(ROOT.parent), str(tiny)],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    got = json.loads(done.stdout.strip().splitlines()[-1])
                    row = {
                        "shape": f"{n}x{d}",
                        "dtype": dtype,
                        "road": road,
                        "file_bytes": file_bytes,
                        "chunk_rows": chunk_rows if road == "chunks" else n,
                        "chunk_float64_bytes": min(chunk_rows, n) * d * 8 if road == "chunks" else n * d * 8,
                        **got,
                        "load_before": [round(x, 2) for x in load],
                        "load_after": [round(x, 2) for x in os.getloadavg()],
                    }
                    rows_out.append(row)
                    print(
                        f"{row['shape']} {dtype} {road}: grown {got['grown'] / 2**20:.1f} MiB (keys "
                        f"{got['keys'] / 2**20:.1f} MiB, file {file_bytes / 2**20:.1f} MiB, chunk "
                        f"{row['chunk_float64_bytes'] / 2**20:.1f} MiB), {got['wall_s']:.2f} s wall, "
                        f"{got['cpu_s']:.2f} s CPU, load {row['load_before'][0]} -> {row['load_after'][0]}",
                        flush=True,
                    )
                for f in folder.iterdir():
                    f.unlink()
    machine = {"platform": platform.platform(), "cores": os.cpu_count(), "python": platform.python_version()}
    record = {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": machine, "note": args.note, "rows": rows_out}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
