"""Fashion-MNIST's training set as float32 images in [0, 1] (N, 28, 28) and
int32 labels, read from the Debian dataset package for the peer benchmarks."""
import gzip, os

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"


def idx(name):
    path = os.path.join(DATA, name)
    if os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rb") as f:
            raw = f.read()
    else:
        with open(path, "rb") as f:
            raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw[4:4 + 4 * ndim], dtype=">u4")
    return np.frombuffer(raw[4 + 4 * ndim:], dtype=np.uint8).reshape(dims)


def fashion_mnist():
    return idx("train-images-idx3-ubyte").astype(np.float32) / 255, idx("train-labels-idx1-ubyte").astype(np.int32)
