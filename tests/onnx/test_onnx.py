"""test_onnx.py - the ONNX round trip (issue 16): for the seed CNN, ResNet-20 and char_gpt,
`mgc export PLAN --load CKPT` gives a model whose onnxruntime outputs equal `mgc predict`'s
within 1e-5; the Python plan.export_onnx does too; tests/onnx/ops.mg covers most op mappings;
a 2-device plan exports replica 0. Run by run.sh (CTest onnx_export).

Checkpoints come from the initial weights with every variable perturbed (the batch-norm
moving statistics too, so inference-mode normalization is exercised), saved through libmgc.
Environment: MGC_BIN (the CLI), MGC_LIBRARY (libmgc.so), MGC_SRC (the source tree)."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

SRC = os.environ["MGC_SRC"]
MGC = os.environ["MGC_BIN"]
sys.path.insert(0, os.path.join(SRC, "python"))
import mgc  # noqa: E402

TOL = 1e-5  # absolute up to |x| = 1, relative above
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(*args, expect=0):
    r = subprocess.run([MGC, *args], capture_output=True, text=True)
    if r.returncode != expect:
        print(r.stdout, r.stderr, file=sys.stderr)
    check(r.returncode == expect, "mgc %s -> exit %d" % (args[0], expect))
    return r


def perturbed_checkpoint(plan_path, ckpt, rng):
    """Every f32 variable of the plan moved away from its initial value (weights scaled by
    0.8-1.2 and shifted, moving means about 0, moving variances 0.5-2), saved as ckpt."""
    plan = mgc.compile(plan_path)
    for name in list(plan.variables):
        v = plan.variables[name]
        if v.dtype != np.float32:
            continue
        if name.endswith("moving_variance"):
            v = rng.uniform(0.5, 2.0, v.shape)
        elif name.endswith("moving_mean"):
            v = rng.normal(0, 0.1, v.shape)
        else:
            v = v * rng.uniform(0.8, 1.2, v.shape) + rng.normal(0, 0.01, v.shape)
        plan.variables[name] = v.astype(np.float32)
    plan.save(ckpt)
    return plan


def onnx_outputs(path, feeds):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return {o.name: v for o, v in zip(s.get_outputs(), s.run(None, feeds))}


def compare(what, got, want):
    """within TOL, relative to the output's magnitude where it exceeds 1 (f32 has 24 bits)"""
    same = got.shape == want.shape and got.dtype == want.dtype
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if same else float("inf")
    scale = max(1.0, float(np.max(np.abs(want))))
    check(same and err <= TOL * scale, "%s: max |onnxruntime - mgc predict| = %.3g (shape %s, |x| up to %.3g)"
          % (what, err, want.shape, float(np.max(np.abs(want)))))


def round_trip(tmp, model, feeds_of, rng):
    """mgc export vs mgc predict on one batch, and plan.export_onnx vs plan.predict."""
    plan_path, ckpt, out = (os.path.join(tmp, model + ext) for ext in (".mgx", ".safetensors", ".onnx"))
    run("compile", os.path.join(SRC, "examples", model + ".mg"), "--devices", "cpu:0", "-o", plan_path)
    plan = perturbed_checkpoint(plan_path, ckpt, rng)
    feeds = feeds_of(plan.global_batch)
    run("export", plan_path, "--load", ckpt, "-o", out)
    args = []
    for name, x in feeds.items():
        np.save(os.path.join(tmp, name + ".npy"), x)
        args += ["--input", "%s=%s" % (name, os.path.join(tmp, name + ".npy"))]
    pred = os.path.join(tmp, model + ".pred.npy")
    run("predict", plan_path, "--load", ckpt, *args, "-o", pred)
    got = onnx_outputs(out, feeds)
    check(len(got) == 1, "%s: one output" % model)
    compare(model + " (mgc export)", next(iter(got.values())), np.load(pred))
    # the Python form, through mgc_export_onnx
    py_out = os.path.join(tmp, model + ".py.onnx")
    plan.export_onnx(py_out)
    compare(model + " (plan.export_onnx)", next(iter(onnx_outputs(py_out, feeds).values())), plan.predict(feeds))


def ops_model(tmp, rng, fuse):
    """tests/onnx/ops.mg: most mappings (fused programs, or each elementwise op with --no-fuse),
    two outputs, compared output by output with plan.predict"""
    plan_path = os.path.join(tmp, "ops.mgx")
    run("compile", os.path.join(SRC, "tests", "onnx", "ops.mg"), "--devices", "cpu:0", "--global-batch", "4",
        "-o", plan_path, *([] if fuse else ["--no-fuse"]))
    plan = perturbed_checkpoint(plan_path, os.path.join(tmp, "ops.safetensors"), rng)
    path = os.path.join(tmp, "ops.onnx")
    plan.export_onnx(path)
    x = {"image": rng.normal(0, 1, (4, 8, 8, 3)).astype(np.float32),
         "ids": rng.integers(-2, 9, (4, 5)).astype(np.int32)}  # ids outside [0, 7): zero rows
    got, want = onnx_outputs(path, x), plan.predict(x)
    check(sorted(got) == ["y", "z"], "ops: outputs y and z")
    for name in sorted(want):
        compare("ops.mg %s (%s)" % (name, "fused" if fuse else "--no-fuse"), got[name], want[name])


def two_devices(tmp, rng):
    """a 2-replica plan exports replica 0's graph: its per-replica batch, the same outputs"""
    plan = mgc.compile(os.path.join(SRC, "examples", "resnet20.mg"), devices=["cpu:0", "cpu:1"], global_batch=16)
    for name in list(plan.variables):
        v = plan.variables[name]
        if name.endswith("moving_variance"):
            plan.variables[name] = rng.uniform(0.5, 2.0, v.shape).astype(np.float32)
        elif name.endswith("moving_mean"):
            plan.variables[name] = rng.normal(0, 0.1, v.shape).astype(np.float32)
    path = os.path.join(tmp, "two.onnx")
    plan.export_onnx(path)
    x = {"image": rng.random((8, 28, 28, 1), np.float32)}
    compare("resnet20 on 2 devices (batch 8 per replica)", next(iter(onnx_outputs(path, x).values())), plan.predict(x))


def errors(tmp):
    """plan.export_onnx of a graph with an unmapped op raises mgc.Error naming it (the CLI's
    errors: tests/onnx/errors.sh, without onnxruntime)"""
    p = mgc.compile("model grad_out {\n  input x: f32[batch, 4]\n  output y = prim.relu_grad(x, x)\n}\n")
    path = os.path.join(tmp, "g.onnx")
    try:
        p.export_onnx(path)
        check(False, "plan.export_onnx of an unmapped op raises")
    except mgc.Error as e:
        check("model 'grad_out': op 'relu_grad'" in str(e) and "has no ONNX mapping" in str(e),
              "plan.export_onnx raises mgc.Error: %s" % e)
    check(not os.path.exists(path), "unmapped op: no file written")


def main():
    rng = np.random.default_rng(16)
    with tempfile.TemporaryDirectory() as tmp:
        round_trip(tmp, "mnist_cnn", lambda n: {"image": rng.random((n, 28, 28, 1), np.float32)}, rng)
        round_trip(tmp, "resnet20", lambda n: {"image": rng.random((n, 28, 28, 1), np.float32)}, rng)
        round_trip(tmp, "char_gpt", lambda n: {"tokens": rng.integers(0, 256, (n, 128)).astype(np.int32)}, rng)
        ops_model(tmp, rng, True)
        ops_model(tmp, rng, False)
        two_devices(tmp, rng)
        errors(tmp)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
