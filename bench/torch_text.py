"""The text classifier of bench/text_classifier.sh in PyTorch (its peer column):
tokens [BATCH, 64] of a 10,000-word vocabulary -> nn.Embedding(10000, 64)
(VARIANT "embedding") or one_hot(tokens, 10000) @ table (VARIANT "onehot",
issue 13's workaround) -> mean over the tokens -> Linear 64 relu -> Linear 2,
cross-entropy, Adam(1e-3, eps 1e-7), on THREADS threads; reads the NPY files
the script writes and prints milliseconds per step (after 5 warm-up steps).
    torch_text.py TOKENS.npy LABELS.npy VARIANT STEPS BATCH THREADS"""
import sys, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM = 10000, 64


class Classifier(nn.Module):
    def __init__(self, onehot):
        super().__init__()
        self.onehot = onehot
        self.table = nn.Parameter(torch.randn(VOCAB, DIM) * 0.05)  # as embedding's random_normal(0.05)
        self.dense = nn.Linear(DIM, 64)
        self.out = nn.Linear(64, 2)

    def forward(self, tokens):
        if self.onehot:
            e = (F.one_hot(tokens.reshape(-1), VOCAB).float() @ self.table).reshape(*tokens.shape, DIM)
        else:
            e = F.embedding(tokens, self.table)
        return self.out(F.relu(self.dense(e.mean(dim=1))))


def main():
    tok_path, lab_path, variant = sys.argv[1], sys.argv[2], sys.argv[3]
    steps, batch, threads = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    x = torch.from_numpy(np.load(tok_path).astype(np.int64))
    y = torch.from_numpy(np.load(lab_path).astype(np.int64))
    model = Classifier(variant == "onehot")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)

    def step(k):
        rows = slice(k * batch % (len(x) - batch + 1), k * batch % (len(x) - batch + 1) + batch)
        opt.zero_grad()
        F.cross_entropy(model(x[rows]), y[rows]).backward()
        opt.step()

    for k in range(5):  # warm-up
        step(k)
    t = time.perf_counter()
    for k in range(steps):
        step(k)
    print(f"{1000 * (time.perf_counter() - t) / steps:.3f}")


if __name__ == "__main__":
    main()
