"""check_safetensors.py - reads a safetensors file written by mgc with json + struct + torch and checks its values."""
import json, struct, sys
try:
    import torch
except ImportError:
    print("no torch in", sys.executable, "- skipped")
    sys.exit(77)

DTYPES = {"F32": torch.float32, "I32": torch.int32, "F64": torch.float64, "U8": torch.uint8}

def read(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = bytearray(blob[8 + n:])
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        t = torch.frombuffer(data[b:end], dtype=DTYPES[e["dtype"]]) if end > b else torch.empty(0, dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"])
    return out, meta

def main():
    t, meta = read(sys.argv[1])
    want_kernel = (torch.arange(784 * 4, dtype=torch.float32) * 0.25 - 100.0).reshape(784, 4)
    checks = [
        (meta == {"format": "pt", "mgc_model": "mnist_cnn"}, "metadata"),
        (sorted(t) == ["adam/m", "dense/kernel", "mask", "step"], "names"),
        (torch.equal(t["dense/kernel"], want_kernel), "dense/kernel"),
        (t["step"].shape == () and t["step"].item() == 1234, "step"),
        (torch.equal(t["adam/m"], torch.tensor([0.1, -2.5e300], dtype=torch.float64)), "adam/m"),
        (torch.equal(t["mask"], torch.tensor([0, 7, 255], dtype=torch.uint8)), "mask"),
    ]
    bad = [name for ok, name in checks if not ok]
    if bad:
        print("mismatch:", ", ".join(bad))
        sys.exit(1)
    print("torch read", len(t), "tensors OK")

main()
