"""test_mgc.py - the Python package against the CLI: fit, evaluate and predict equal
`mgc run`, `mgc eval` and `mgc predict` on the same plan, data and seed; errors as
mgc.Error with libmgc's exact message; 2 devices equal 1 within 1e-5; variables
round trip; SIGINT during fit stops after the step and raises KeyboardInterrupt."""
import json
import os
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

import mgc

SRC = Path(__file__).resolve().parents[2]
TINY = str(SRC / "tests" / "api" / "tiny.mg")
MGC = os.environ.get("MGC_BIN", str(SRC / "build" / "mgc"))


def data(n=256, seed=3):
    r = np.random.default_rng(seed)
    x = r.uniform(-1, 1, (n, 12)).astype(np.float32)
    w = r.normal(size=(12, 4))
    return x, (x @ w).argmax(axis=1).astype(np.int64)   # int64 labels, as numpy makes them


def test_fit_evaluate_predict_equal_the_cli(tmp_path):
    x, y = data()
    plan = mgc.compile(TINY, devices=["cpu:0", "cpu:1"], seed=5)
    assert plan.devices == 2 and plan.global_batch == 64
    hist = plan.fit({"x": x, "label": y}, epochs=3, validation_data=({"x": x, "label": y}), verbose=0)
    assert sorted(hist) == ["accuracy", "loss", "val_accuracy", "val_loss"] and len(hist["loss"]) == 3
    assert hist["loss"][2] < hist["loss"][0]
    plan.save(tmp_path / "lib.safetensors")
    plan.save(tmp_path / "tiny.mgx")
    scores = plan.evaluate({"x": x, "label": y})
    pred = plan.predict({"x": x})
    assert pred.shape == (256, 4) and pred.dtype == np.float32
    assert scores["loss"] == pytest.approx(hist["val_loss"][-1], rel=1e-12)

    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    bind = ["--input", f"x={tmp_path}/x.npy", "--input", f"label={tmp_path}/y.npy"]
    plan_file, ckpt = str(tmp_path / "tiny.mgx"), str(tmp_path / "cli.safetensors")
    subprocess.run([MGC, "run", plan_file, "--epochs", "3", "--seed", "5", *bind, "--save", ckpt], check=True,
                   capture_output=True)
    assert (tmp_path / "lib.safetensors").read_bytes() == Path(ckpt).read_bytes()
    out = subprocess.run([MGC, "eval", plan_file, "--load", ckpt, *bind, "--json"], check=True, capture_output=True,
                         text=True).stdout
    cli = json.loads(out)
    assert cli["examples"] == 256
    assert cli["loss"] == float("%.9g" % scores["loss"]) and cli["accuracy"] == float("%.9g" % scores["accuracy"])
    subprocess.run([MGC, "predict", plan_file, "--load", ckpt, "--input", f"x={tmp_path}/x.npy", "-o",
                    str(tmp_path / "p.npy")], check=True, capture_output=True)
    assert np.array_equal(np.load(tmp_path / "p.npy"), pred)

    # a fresh plan loading the CLI's checkpoint predicts the same
    again = mgc.compile(str(tmp_path / "tiny.mgx"))
    again.load(ckpt)
    assert again.step == plan.step == 12
    assert np.array_equal(again.predict({"x": x}), pred)


def test_progress_line(capsys):
    x, y = data()
    plan = mgc.compile(TINY)
    plan.fit({"x": x, "label": y}, epochs=1)
    out = capsys.readouterr().out
    assert out.startswith("Epoch 1/1\n8/8 [==============================] - ")
    assert " - loss: " in out and " - accuracy: " in out and out.endswith(" img/s\n")


def test_errors_carry_the_message():
    x, y = data()
    plan = mgc.compile(TINY)
    with pytest.raises(mgc.Error, match=r"^input 'x' is f64\[256,12\], the plan wants f32\[N,12\]$"):
        plan.fit({"x": x.astype(np.float64), "label": y})
    with pytest.raises(mgc.Error, match=r"^input 'x' is f32\[256,3,4\], the plan wants f32\[N,12\]$"):
        plan.evaluate({"x": x.reshape(256, 3, 4), "label": y})
    with pytest.raises(mgc.Error, match=r"^input 'label' is not fed$"):
        plan.evaluate({"x": x})
    with pytest.raises(mgc.Error, match=r"^model 'tiny' has no input named 'image' \(its inputs: x, label\)$"):
        plan.predict({"image": x})
    with pytest.raises(mgc.Error, match=r"^input 'label' has 100 examples, the inputs before it 256$"):
        plan.evaluate({"x": x, "label": y[:100]})
    with pytest.raises(mgc.Error, match=r"^input 'x' is float16, which mgc does not take"):
        plan.predict({"x": x.astype(np.float16)})
    with pytest.raises(mgc.Error) as e:
        mgc.compile("use nn\nmodel bad {\n  input x: f32[batch, 3]\n  y = nosuch(x)\n}\n")
    assert str(e.value).startswith("<source>:4:7: error: unknown name 'nosuch'\n  y = nosuch(x)\n      ^\n")
    assert e.value.status == 1
    with pytest.raises(mgc.Error, match=r"^devices: 'tpu:0' is not a device \(expected cpu:N or gpu:N\)$"):
        mgc.compile(TINY, devices=["tpu:0"])
    with pytest.raises(KeyError):
        plan.variables["dense/kernal"]


def test_two_devices_equal_one():
    x, y = data(512)
    one = mgc.compile(TINY, devices=["cpu:0"], global_batch=64)
    two = mgc.compile(TINY, devices=["cpu:0", "cpu:1"])
    assert one.global_batch == two.global_batch == 64
    h1 = one.fit({"x": x, "label": y}, epochs=2, verbose=0)
    h2 = two.fit({"x": x, "label": y}, epochs=2, verbose=0)
    assert np.allclose(h1["loss"], h2["loss"], atol=1e-5, rtol=0)
    assert sorted(one.variables) == sorted(two.variables)
    for name in one.variables:
        np.testing.assert_allclose(one.variables[name], two.variables[name], atol=1e-5, rtol=0, err_msg=name)


def test_steps_in_flight_keep_the_bits():
    # without on_step the next step is queued before the last is reported
    x, y = data(512)
    ahead, one_at_a_time = (mgc.compile(TINY, devices=["cpu:0", "cpu:1"], seed=2) for _ in range(2))
    seen = []
    h1 = ahead.fit({"x": x, "label": y}, epochs=2, verbose=0)
    h2 = one_at_a_time.fit({"x": x, "label": y}, epochs=2, verbose=0, on_step=lambda step, logs: seen.append(step))
    assert h1 == h2 and seen == list(range(1, 17)) and ahead.step == one_at_a_time.step == 16
    for name in ahead.variables:
        assert np.array_equal(ahead.variables[name], one_at_a_time.variables[name]), name


def test_variables_round_trip(tmp_path):
    plan = mgc.compile(TINY)
    assert plan.variables["dense/kernel"].shape == (12, 16)
    k = np.arange(12 * 16, dtype=np.float32).reshape(12, 16) / 100
    plan.variables["dense/kernel"] = k
    assert np.array_equal(plan.variables["dense/kernel"], k)
    with pytest.raises(mgc.Error, match=r"^variable 'dense/kernel' is f32\[12, 16\], the value's shape is \[16, 12\]$"):
        plan.variables["dense/kernel"] = k.T
    plan.save(tmp_path / "w.safetensors")
    other = mgc.compile(TINY, seed=9)
    assert not np.array_equal(other.variables["dense/kernel"], k)
    other.load(tmp_path / "w.safetensors")
    assert np.array_equal(other.variables["dense/kernel"], k)


def test_sigint_stops_after_the_step():
    x, y = data()
    plan = mgc.compile(TINY)
    seen = []

    def on_step(step, logs):
        seen.append(step)
        if step == 3:
            os.kill(os.getpid(), signal.SIGINT)   # as Ctrl-C does

    with pytest.raises(KeyboardInterrupt):
        plan.fit({"x": x, "label": y}, epochs=5, verbose=0, on_step=on_step)
    assert plan.step == 3 and seen == [1, 2, 3]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
