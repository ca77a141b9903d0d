"""The seed CNN in PyTorch (the peer of bench/train.sh): trains STEPS steps of
batch BATCH on Fashion-MNIST with THREADS threads and prints images/s."""
import gzip, os, sys, time

import numpy as np
import torch
import torch.nn as nn

steps, batch, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
data = sys.argv[4] if len(sys.argv) > 4 else "/usr/share/datasets/fashion-mnist"
torch.set_num_threads(threads)
torch.manual_seed(1)


def idx(name):
    path = os.path.join(data, name)
    opener = gzip.open if os.path.exists(path + ".gz") else open
    with opener(path + ".gz" if os.path.exists(path + ".gz") else path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw[4:4 + 4 * ndim], dtype=">u4")
    return np.frombuffer(raw[4 + 4 * ndim:], dtype=np.uint8).reshape(dims)


x = torch.from_numpy(idx("train-images-idx3-ubyte").astype(np.float32) / 255).unsqueeze(1)  # NCHW
y = torch.from_numpy(idx("train-labels-idx1-ubyte").astype(np.int64))
model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(5408, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
loss_fn = nn.CrossEntropyLoss()
perm = torch.randperm(len(x))


def step(k):
    idx_ = perm[(k * batch) % (len(x) - batch):][:batch]
    opt.zero_grad()
    loss = loss_fn(model(x[idx_]), y[idx_])
    loss.backward()
    opt.step()


for k in range(10):  # warm-up
    step(k)
t = time.perf_counter()
for k in range(steps):
    step(k)
elapsed = time.perf_counter() - t
print(f"{steps * batch / elapsed:.0f}")
