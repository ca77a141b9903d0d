"""examples/char_gpt.mg in PyTorch (the peer of bench/char_gpt.sh): the same
architecture, parameterisation, initialisation, optimizer, schedule and data
cut, so that validation losses after the same number of steps compare.

    torch_char_gpt.py TEXT STEPS BATCH THREADS [REPLICAS] [SEED]

TEXT is a file or a directory read as mgc reads `--data text:` (regular files
in name order, symlinks and files holding a NUL byte skipped); the last 10% of
the bytes are the validation part. BATCH is per replica; with REPLICAS > 1 it
runs DistributedDataParallel over that many processes (gloo, one core each).
Prints one JSON line: tokens/s of the timed steps and the validation loss."""
import json, math, os, sys, time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

T, D, HEADS, LAYERS, VOCAB, RATE = 128, 128, 4, 4, 256, 0.1


def corpus(path):
    if os.path.isdir(path):
        parts = []
        for name in sorted(os.listdir(path)):
            p = os.path.join(path, name)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            b = open(p, "rb").read()
            if b"\0" not in b:
                parts.append(b)
        data = b"".join(parts)
    else:
        data = open(path, "rb").read()
    return np.frombuffer(data, dtype=np.uint8)


def windows(part):
    """non-overlapping examples at 0, T, 2T, ...: tokens p[eT, eT+T), labels one further"""
    n = (len(part) - 1) // T
    x = np.stack([part[e * T:e * T + T] for e in range(n)]).astype(np.int64)
    y = np.stack([part[e * T + 1:e * T + T + 1] for e in range(n)]).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def glorot(*shape, fan_in, fan_out):
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return nn.Parameter(torch.empty(*shape).uniform_(-limit, limit))


def dense(k, units):  # Keras Dense: glorot_uniform kernel [k, units], zero bias
    return glorot(k, units, fan_in=k, fan_out=units), nn.Parameter(torch.zeros(units))


class Attention(nn.Module):
    """Keras MultiHeadAttention as causal self-attention: kernels [d, heads, key_dim]
    and [heads, key_dim, d] with Keras' fans, scores scaled by 1/sqrt(key_dim)."""

    def __init__(self):
        super().__init__()
        k = D // HEADS
        for name in ("query", "key", "value"):
            setattr(self, name, glorot(D, HEADS * k, fan_in=D * HEADS, fan_out=D * k))
            setattr(self, name + "_bias", nn.Parameter(torch.zeros(HEADS * k)))
        self.out = glorot(HEADS * k, D, fan_in=HEADS * k, fan_out=HEADS * D)
        self.out_bias = nn.Parameter(torch.zeros(D))
        self.register_buffer("mask", torch.tril(torch.ones(T, T)))

    def forward(self, x):
        b, t, _ = x.shape
        heads = lambda w, bias: (x @ w + bias).view(b, t, HEADS, -1).transpose(1, 2)
        q = heads(self.query, self.query_bias) / math.sqrt(D // HEADS)
        k, v = heads(self.key, self.key_bias), heads(self.value, self.value_bias)
        scores = q @ k.transpose(-1, -2) + (1.0 - self.mask[:t, :t]) * -1e9
        p = F.dropout(torch.softmax(scores, -1), RATE, self.training)
        return (p @ v).transpose(1, 2).reshape(b, t, D) @ self.out + self.out_bias


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D, eps=1e-5), nn.LayerNorm(D, eps=1e-5)
        self.attn = Attention()
        self.w1, self.b1 = dense(D, 4 * D)
        self.w2, self.b2 = dense(4 * D, D)

    def forward(self, x):
        x = x + F.dropout(self.attn(self.ln1(x)), RATE, self.training)
        m = F.gelu(self.ln2(x) @ self.w1 + self.b1) @ self.w2 + self.b2
        return x + F.dropout(m, RATE, self.training)


class CharGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Parameter(torch.randn(VOCAB, D) * 0.05)  # mgc's embedding: random_normal(0.05)
        self.positions = glorot(T, D, fan_in=T, fan_out=D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D, eps=1e-5)
        self.w, self.b = dense(D, VOCAB)

    def forward(self, ids):
        x = self.tokens[ids] + self.positions[:ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.ln(x) @ self.w + self.b


def learning_rate(step):
    """cosine_decay(1e-5, decay_steps: 2000, alpha: 0.1, warmup_target: 1e-3, warmup_steps: 100)"""
    initial, decay_steps, alpha, target, warmup = 1e-5, 2000, 0.1, 1e-3, 100
    if step < warmup:
        return initial + (target - initial) * step / warmup
    t = min(step - warmup, decay_steps) / decay_steps
    return target * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * t)) + alpha)


def train(rank, text, steps, batch, threads, replicas, seed, result):
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    data = corpus(text)
    held = len(data) // 10
    x, y = windows(data[:len(data) - held])
    vx, vy = windows(data[len(data) - held:])
    model = CharGPT()
    if replicas > 1:
        os.sched_setaffinity(0, {rank % os.cpu_count()})
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29519", rank=rank, world_size=replicas)
        model = nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)  # the causal mask is a constant
    # Keras AdamW: epsilon 1e-7, decoupled weight decay 0.004 on every variable
    opt = torch.optim.AdamW(model.parameters(), lr=1.0, eps=1e-7, weight_decay=0.004)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, learning_rate)
    g = torch.Generator().manual_seed(seed)
    order, at, global_batch = torch.randperm(len(x), generator=g), 0, batch * replicas

    def step():
        nonlocal order, at
        if at + global_batch > len(order):
            order, at = torch.randperm(len(x), generator=g), 0
        rows = order[at + rank * batch:at + rank * batch + batch]
        at += global_batch
        opt.zero_grad()
        F.cross_entropy(model(x[rows]).reshape(-1, VOCAB), y[rows].reshape(-1)).backward()
        opt.step()
        sched.step()

    warm = min(5, steps)
    for _ in range(warm):
        step()
    t = time.perf_counter()
    for _ in range(steps - warm):
        step()
    elapsed = time.perf_counter() - t
    if rank == 0:
        model = model.module if replicas > 1 else model  # evaluate alone, without DDP's collectives
        model.eval()
        with torch.no_grad():
            losses = [F.cross_entropy(model(vx[i:i + 64]).reshape(-1, VOCAB), vy[i:i + 64].reshape(-1),
                                      reduction="sum").item() for i in range(0, len(vx), 64)]
        result["val_loss"] = sum(losses) / (len(vx) * T)
        result["tokens_per_sec"] = (steps - warm) * global_batch * T / elapsed
    if replicas > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    text, steps, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    replicas = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    seed = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    result = mp.get_context("spawn").Manager().dict() if replicas > 1 else {}
    if replicas > 1:
        mp.spawn(train, args=(text, steps, batch, threads, replicas, seed, result), nprocs=replicas)
    else:
        train(0, text, steps, batch, threads, 1, seed, result)
    print(json.dumps({"framework": "pytorch " + torch.__version__, "replicas": replicas, "steps": steps,
                      "val_loss": result["val_loss"], "tokens_per_sec": result["tokens_per_sec"]}))
