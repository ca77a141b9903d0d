"""The seed CNN in PyTorch (the peer of bench/train.sh): trains STEPS steps of
batch BATCH on Fashion-MNIST with THREADS threads and prints images/s. With
REPLICAS > 1 it runs DistributedDataParallel over that many processes (gloo,
one core each, BATCH per replica) and prints the job's images/s.
    torch_cnn.py STEPS BATCH THREADS [REPLICAS]"""
import gzip, os, sys, time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"


def idx(name):
    path = os.path.join(DATA, name)
    opener = gzip.open if os.path.exists(path + ".gz") else open
    with opener(path + ".gz" if os.path.exists(path + ".gz") else path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw[4:4 + 4 * ndim], dtype=">u4")
    return np.frombuffer(raw[4 + 4 * ndim:], dtype=np.uint8).reshape(dims)


def train(rank, replicas, steps, batch, threads, result):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    x = torch.from_numpy(idx("train-images-idx3-ubyte").astype(np.float32) / 255).unsqueeze(1)  # NCHW
    y = torch.from_numpy(idx("train-labels-idx1-ubyte").astype(np.int64))
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(5408, 128), nn.ReLU(), nn.Linear(128, 10))
    if replicas > 1:
        os.sched_setaffinity(0, {rank % os.cpu_count()})
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29517", rank=rank, world_size=replicas)
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(len(x))

    def step(k):
        rows = perm[(k * batch * replicas + rank * batch) % (len(x) - batch * replicas):][:batch]
        opt.zero_grad()
        loss_fn(model(x[rows]), y[rows]).backward()
        opt.step()

    for k in range(10):  # warm-up
        step(k)
    t = time.perf_counter()
    for k in range(steps):
        step(k)
    elapsed = time.perf_counter() - t
    if rank == 0:
        result.value = steps * batch * replicas / elapsed
    if replicas > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    steps, batch, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    replicas = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    result = mp.get_context("spawn").Value("d", 0.0)
    if replicas > 1:
        mp.spawn(train, args=(replicas, steps, batch, threads, result), nprocs=replicas)
    else:
        train(0, 1, steps, batch, threads, result)
    print(f"{result.value:.0f}")
