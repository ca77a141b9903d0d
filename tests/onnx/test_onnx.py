"""test_onnx.py - the ONNX round trip (issue 16): for the seed CNN, ResNet-20 and char_gpt,
`mgc export PLAN --load CKPT` gives a model whose onnxruntime outputs equal `mgc predict`'s
within 1e-5; the Python plan.export_onnx does too; export's errors. Run by run.sh (CTest).

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
    model = os.path.join(SRC, "examples", "mnist_cnn.mg")
    plan_path, ckpt = os.path.join(tmp, "e.mgx"), os.path.join(tmp, "e.safetensors")
    run("compile", model, "--devices", "cpu:0", "-o", plan_path)
    mgc.compile(plan_path).save(ckpt)
    r = run("export", plan_path, "-o", os.path.join(tmp, "x.onnx"), expect=1)
    check("mgc: export needs --load CKPT" in r.stderr, "export without --load: " + r.stderr.splitlines()[0])
    r = run("export", plan_path, "--load", ckpt, "-o", os.path.join(tmp, "no", "such", "dir", "x.onnx"), expect=1)
    check("cannot write" in r.stderr and "no/such/dir/x.onnx" in r.stderr, "unwritable -o: " + r.stderr.strip())
    # an op with no ONNX mapping (a gradient op as an output) names the op and the model
    src = os.path.join(tmp, "grad_out.mg")
    with open(src, "w") as f:
        f.write("model grad_out {\n  input x: f32[batch, 4]\n  output y = prim.relu_grad(x, x)\n}\n")
    plan_path2 = os.path.join(tmp, "g.mgx")
    run("compile", src, "--devices", "cpu:0", "-o", plan_path2)
    p = mgc.compile(plan_path2)
    ckpt2 = os.path.join(tmp, "g.safetensors")
    p.save(ckpt2)
    r = run("export", plan_path2, "--load", ckpt2, "-o", os.path.join(tmp, "g.onnx"), expect=1)
    check("model 'grad_out': op 'relu_grad'" in r.stderr and "has no ONNX mapping" in r.stderr,
          "unmapped op: " + r.stderr.strip())
    check(not os.path.exists(os.path.join(tmp, "g.onnx")), "unmapped op: no file written")
    # a model without outputs has nothing to export
    src = os.path.join(tmp, "nooutput.mg")
    with open(src, "w") as f:
        f.write("use nn\n\nmodel m {\n  input x: f32[batch, 2]\n  input label: i32[batch]\n"
                "  l = sparse_softmax_cross_entropy(x, label)\n  loss = l\n}\n")
    plan_path3, ckpt3 = os.path.join(tmp, "n.mgx"), os.path.join(tmp, "n.safetensors")
    run("compile", src, "--devices", "cpu:0", "-o", plan_path3)
    mgc.compile(plan_path3).save(ckpt3)
    r = run("export", plan_path3, "--load", ckpt3, "-o", os.path.join(tmp, "n.onnx"), expect=1)
    check(r.stderr.strip() == "mgc: %s: model 'm' has no output to export" % plan_path3, "no output: " + r.stderr.strip())
    try:
        p.export_onnx(os.path.join(tmp, "g2.onnx"))
        check(False, "plan.export_onnx of an unmapped op raises")
    except mgc.Error as e:
        check("has no ONNX mapping" in str(e), "plan.export_onnx raises mgc.Error: %s" % e)


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
