"""The seed CNN in JAX: one jitted training step (conv 3x3x32 + ReLU, 2x2
max-pool, dense 128 + ReLU, dense 10, softmax cross-entropy, Adam), data
parallel over DEVICES host devices with jax.pmap and a pmean of the gradients
(XLA's MirroredStrategy); BATCH examples per replica, STEPS timed steps after
a warm-up; prints images/s. XLA's CPU client gets one device per core asked
for and single-threaded Eigen (the peer of one mgc device per core). The peer
of bench/train.sh; run from the venv that script makes.
    jax_cnn.py STEPS BATCH DEVICES"""
import os, sys, time

steps, batch, devices = map(int, sys.argv[1:4])
os.environ["XLA_FLAGS"] = (f"--xla_force_host_platform_device_count={devices} "
                           "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from peer_data import fashion_mnist

WARMUP = 20


def init(key):
    k = jax.random.split(key, 3)
    glorot = jax.nn.initializers.glorot_uniform()
    return {"conv": (glorot(k[0], (3, 3, 1, 32)), jnp.zeros(32)),
            "d1": (glorot(k[1], (5408, 128)), jnp.zeros(128)),
            "d2": (glorot(k[2], (128, 10)), jnp.zeros(10))}


def loss_fn(p, x, y):
    h = jax.lax.conv_general_dilated(x, p["conv"][0], (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = jax.nn.relu(h + p["conv"][1])
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p["d1"][0] + p["d1"][1])
    logits = h @ p["d2"][0] + p["d2"][1]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


def adam(p, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
    scale = lr * jnp.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    p = jax.tree_util.tree_map(lambda p, m, v: p - scale * m / (jnp.sqrt(v) + eps), p, m, v)
    return p, m, v


def step(p, m, v, t, x, y):
    return adam(p, jax.grad(loss_fn)(p, x, y), m, v, t)


def main():
    x, y = fashion_mnist()
    x = x[..., None]
    params = init(jax.random.PRNGKey(1))
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    mesh = jax.make_mesh((devices,), ("replicas",))
    same = NamedSharding(mesh, PartitionSpec())
    split = NamedSharding(mesh, PartitionSpec("replicas"))
    p, m, v = (jax.device_put(tree, same) for tree in (params, zeros, zeros))
    train = jax.jit(step, in_shardings=(same, same, same, None, split, split), out_shardings=(same, same, same))
    order = np.random.default_rng(1).permutation(len(x))
    global_batch = batch * devices

    def run(k):
        nonlocal p, m, v
        rows = order[(k * global_batch) % (len(x) - global_batch):][:global_batch]
        p, m, v = train(p, m, v, k + 1.0, jax.device_put(x[rows], split), jax.device_put(y[rows], split))

    for k in range(WARMUP):
        run(k)
    jax.block_until_ready(p)
    start = time.perf_counter()
    for k in range(WARMUP, WARMUP + steps):
        run(k)
    jax.block_until_ready(p)
    print(round(steps * global_batch / (time.perf_counter() - start)))


main()
