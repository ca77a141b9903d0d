"""ResNet-20 in PyTorch, the peer of bench/resnet20.sh and examples/resnet20.mg:
He et al.'s CIFAR ResNet (3 stages x 3 basic blocks, 16/32/64 filters, a 1x1
convolution + batch norm where a block changes shape) on Fashion-MNIST, with
the same initialisation (Keras: he_normal convolutions, glorot_uniform dense,
zero biases, BatchNormalization momentum 0.99 / epsilon 1e-3), SGD momentum
0.9 and a cosine decay of the learning rate over every step. Trains EPOCHS
epochs at global batch 128 on THREADS threads, evaluates on the test set and
prints one JSON line: test accuracy, test loss, images/s of the training steps.
With --speed it only times STEPS steps of BATCH examples a replica (after a
warm-up) and prints images/s; REPLICAS > 1 runs DistributedDataParallel over
that many processes (gloo, one core each), as bench/torch_cnn.py does.
    torch_resnet20.py SEED EPOCHS THREADS [LR]
    torch_resnet20.py --speed STEPS BATCH THREADS [REPLICAS]"""
import json, math, os, sys, time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

from torch_cnn import idx

BATCH = 128


def conv_bn(cin, cout, stride, kernel=3):
    conv = nn.Conv2d(cin, cout, kernel, stride, padding=kernel // 2 if stride == 1 else 0, bias=False)
    nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")  # Keras he_normal: std sqrt(2 / fan_in)
    return conv, nn.BatchNorm2d(cout, eps=1e-3, momentum=0.01)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        self.c1, self.b1 = conv_bn(cin, cout, stride)
        self.c2, self.b2 = conv_bn(cout, cout, 1)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj, self.pb = conv_bn(cin, cout, stride, kernel=1)

    def same_pad(self, x):  # Keras "same" with stride 2: the odd pixel at the bottom/right
        if self.stride == 1:
            return x
        h = x.shape[2]
        total = max((math.ceil(h / self.stride) - 1) * self.stride + 3 - h, 0)
        return nn.functional.pad(x, (total // 2, total - total // 2, total // 2, total - total // 2))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(self.same_pad(x))))
        y = self.b2(self.c2(y))
        s = x if self.proj is None else self.pb(self.proj(x))
        return torch.relu(y + s)


class ResNet20(nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.b = conv_bn(1, 16, 1)
        blocks, cin = [], 16
        for stage, cout in enumerate((16, 32, 64)):
            for i in range(3):
                blocks.append(Block(cin, cout, 2 if stage > 0 and i == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, 10)
        nn.init.xavier_uniform_(self.fc.weight)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x):
        x = torch.relu(self.b(self.c(x)))
        x = self.blocks(x)
        return self.fc(x.mean(dim=(2, 3)))


def main():
    seed, epochs, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    lr = float(sys.argv[4]) if len(sys.argv) > 4 else 0.1
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    x = torch.from_numpy(idx("train-images-idx3-ubyte").astype(np.float32) / 255).unsqueeze(1)
    y = torch.from_numpy(idx("train-labels-idx1-ubyte").astype(np.int64))
    xt = torch.from_numpy(idx("t10k-images-idx3-ubyte").astype(np.float32) / 255).unsqueeze(1)
    yt = torch.from_numpy(idx("t10k-labels-idx1-ubyte").astype(np.int64))
    model = ResNet20()
    print(f"params {sum(p.numel() for p in model.parameters())}", file=sys.stderr)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    steps_per_epoch = len(x) // BATCH
    total = epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    loss_fn = nn.CrossEntropyLoss()
    start = time.perf_counter()
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(x))
        for k in range(steps_per_epoch):
            rows = perm[k * BATCH:(k + 1) * BATCH]
            opt.zero_grad()
            loss_fn(model(x[rows]), y[rows]).backward()
            opt.step()
            sched.step()
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(xt[i:i + 1000]) for i in range(0, len(xt), 1000)])
    acc = (logits.argmax(1) == yt).float().mean().item()
    print(json.dumps({"framework": "pytorch " + torch.__version__, "seed": seed, "test_accuracy": acc,
                      "test_loss": loss_fn(logits, yt).item(), "images_per_sec": total * BATCH / seconds}))


def speed(rank, replicas, steps, batch, threads, result):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    x = torch.from_numpy(idx("train-images-idx3-ubyte").astype(np.float32) / 255).unsqueeze(1)
    y = torch.from_numpy(idx("train-labels-idx1-ubyte").astype(np.int64))
    model = ResNet20()
    if replicas > 1:
        os.sched_setaffinity(0, {rank % os.cpu_count()})
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29519", rank=rank, world_size=replicas)
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(len(x))

    def step(k):
        rows = perm[(k * batch * replicas + rank * batch) % (len(x) - batch * replicas):][:batch]
        opt.zero_grad()
        loss_fn(model(x[rows]), y[rows]).backward()
        opt.step()

    for k in range(5):  # warm-up
        step(k)
    start = time.perf_counter()
    for k in range(5, 5 + steps):
        step(k)
    if rank == 0:
        result.value = steps * batch * replicas / (time.perf_counter() - start)


if __name__ == "__main__":
    if sys.argv[1] == "--speed":
        steps, batch, threads = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        replicas = int(sys.argv[5]) if len(sys.argv) > 5 else 1
        result = mp.get_context("spawn").Value("d", 0.0)
        if replicas > 1:
            mp.spawn(speed, (replicas, steps, batch, threads, result), nprocs=replicas)
        else:
            speed(0, 1, steps, batch, threads, result)
        print(round(result.value))
    else:
        main()
