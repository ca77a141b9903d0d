"""mgc - the Mirrored Graph Compiler from Python: numpy in, numpy out, over libmgc.

    import mgc
    plan = mgc.compile("examples/mnist_cnn.mg", devices=["cpu:0", "cpu:1"])
    hist = plan.fit({"image": x, "label": y}, epochs=1, validation_data={"image": xt, "label": yt})
    plan.evaluate({"image": xt, "label": yt}); plan.predict({"image": xt})
    plan.save("m.safetensors"); plan.load("m.safetensors"); plan.variables["dense/kernel"]

Errors are mgc.Error carrying libmgc's message; Ctrl-C during fit stops after the
step in progress and raises KeyboardInterrupt (the weights of that step are kept).
See docs/python.md.
"""
import ctypes
import os
import signal
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path

import numpy as np

from . import _capi

__all__ = ["Error", "Plan", "compile", "library_path"]
__version__ = "0.1.0"

_lib, _lib_path = _capi.load()

_NP = {_capi.F32: np.dtype(np.float32), _capi.I32: np.dtype(np.int32), _capi.F64: np.dtype(np.float64),
       _capi.U8: np.dtype(np.uint8)}
_MGC = {v: k for k, v in _NP.items()}
_NAMES = {_capi.F32: "f32", _capi.I32: "i32", _capi.F64: "f64", _capi.U8: "u8"}


def library_path():
    """The libmgc.so this package uses."""
    return str(_lib_path)


class Error(Exception):
    """A failure libmgc reported: .status (mgc_status) and its message."""

    def __init__(self, message, status=_capi.ERR_ARG):
        super().__init__(message)
        self.status = status


def _check(status, err):
    if status != _capi.OK:
        raise Error(err.message.decode("utf-8", "replace"), status)


def _bundled_stdlib():
    d = Path(__file__).resolve().parent / "stdlib"
    return str(d) if (d / "nn.mg").exists() else None


def _info(fn, handle, k):
    err, t = _capi.Error(), _capi.TensorInfo()
    _check(fn(handle, k, ctypes.byref(t), ctypes.byref(err)), err)
    return t.name.decode(), t.dtype, tuple(t.shape[d] for d in range(t.rank))


class _Feeds:
    """Feeds over numpy arrays: zero-copy for C-contiguous arrays of an mgc dtype;
    int64 becomes int32 where the plan wants i32 (every value must fit, as mgc
    reads '<i8' NPY files); other arrays are made contiguous (one copy)."""

    def __init__(self, plan, inputs):
        if not isinstance(inputs, dict):
            raise Error("inputs must be a dict of input name -> numpy array, not %s" % type(inputs).__name__)
        wants = {name: dtype for name, dtype, _ in plan._inputs}
        self.arrays, self.shapes = [], []
        self.feeds = (_capi.Feed * max(len(inputs), 1))()
        for k, (name, value) in enumerate(inputs.items()):
            a = np.asarray(value)
            if a.dtype == np.int64 and wants.get(name) == _capi.I32:
                if a.size and (a.min() < -2**31 or a.max() >= 2**31):
                    raise Error("input '%s': an int64 value does not fit in i32" % name)
                a = a.astype(np.int32)
            if a.dtype not in _MGC:
                raise Error("input '%s' is %s, which mgc does not take (f32, i32, f64, u8)" % (name, a.dtype))
            a = np.ascontiguousarray(a)
            shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
            self.arrays.append(a)
            self.shapes.append(shape)
            self.feeds[k] = _capi.Feed(name.encode(), _MGC[a.dtype], a.ndim, shape, a.ctypes.data)
        self.n = len(inputs)
        self.examples = len(self.arrays[0]) if self.arrays and self.arrays[0].ndim else 0


class _Variables(MutableMapping):
    """plan.variables: name -> numpy copy of the value; assigning writes every replica."""

    def __init__(self, plan):
        self._plan = plan

    def _infos(self):
        s = self._plan._session
        return [_info(lambda h, k, t, e: _lib.mgc_variable_info(h, k, t, None, e), s, k)
                for k in range(_lib.mgc_variable_count(s))]

    def _find(self, name):
        for n, dtype, shape in self._infos():
            if n == name:
                return dtype, shape
        raise KeyError(name)

    def __getitem__(self, name):
        dtype, shape = self._find(name)
        out = np.empty(shape, _NP[dtype])
        err = _capi.Error()
        _check(_lib.mgc_variable_read(self._plan._session, name.encode(), out.ctypes.data, out.nbytes,
                                      ctypes.byref(err)), err)
        return out

    def __setitem__(self, name, value):
        dtype, shape = self._find(name)
        a = np.ascontiguousarray(value, dtype=_NP[dtype])
        if a.shape != shape:
            raise Error("variable '%s' is %s%s, the value's shape is %s" % (name, _NAMES[dtype], list(shape), list(a.shape)))
        err = _capi.Error()
        _check(_lib.mgc_variable_write(self._plan._session, name.encode(), a.ctypes.data, a.nbytes,
                                       ctypes.byref(err)), err)

    def __delitem__(self, name):
        raise Error("variables cannot be deleted")

    def __iter__(self):
        return iter([n for n, _, _ in self._infos()])

    def __len__(self):
        return _lib.mgc_variable_count(self._plan._session)


class Plan:
    """A compiled plan and the session that runs it (see mgc.compile)."""

    def __init__(self, handle, seed=1, threads_per_device=1, collective_timeout=60.0, check_numerics=False,
                 check_replicas=0):
        self._plan, self._session = handle, None
        err, so = _capi.Error(), _capi.SessionOptions()
        _lib.mgc_session_options_init(ctypes.byref(so))
        so.seed, so.threads_per_device, so.collective_timeout = seed, threads_per_device, collective_timeout
        so.check_numerics, so.check_replicas = int(bool(check_numerics)), check_replicas
        session = ctypes.c_void_p()
        _check(_lib.mgc_session_new(handle, ctypes.byref(so), ctypes.byref(session), ctypes.byref(err)), err)
        self._session = session
        self._inputs = [_info(_lib.mgc_plan_input, handle, k) for k in range(_lib.mgc_plan_input_count(handle))]
        self._outputs = [_info(_lib.mgc_plan_output, handle, k) for k in range(_lib.mgc_plan_output_count(handle))]
        self.metrics = [_lib.mgc_plan_metric_name(handle, k).decode() for k in range(_lib.mgc_plan_metric_count(handle))]
        self.variables = _Variables(self)

    def __del__(self):
        if getattr(self, "_session", None):
            _lib.mgc_session_free(self._session)
            self._session = None
        if getattr(self, "_plan", None):
            _lib.mgc_plan_free(self._plan)
            self._plan = None

    @property
    def model_name(self):
        return _lib.mgc_plan_model_name(self._plan).decode()

    @property
    def devices(self):
        return _lib.mgc_plan_devices(self._plan)

    @property
    def global_batch(self):
        return _lib.mgc_plan_global_batch(self._plan)

    @property
    def step(self):
        """Optimizer steps taken."""
        return _lib.mgc_session_step(self._session)

    @property
    def inputs(self):
        """name -> (dtype name, per-example shape)."""
        return {n: (_NAMES[d], s) for n, d, s in self._inputs}

    @property
    def outputs(self):
        return {n: (_NAMES[d], s) for n, d, s in self._outputs}

    def fit(self, inputs, epochs=1, steps=None, batch_size=None, validation_data=None, verbose=1, on_step=None):
        """Trains as `mgc run` does (global batches of the plan, shuffled per epoch by the
        seed). Returns the Keras-like history: {"loss": [...], "<metric>": [...],
        "val_loss": [...], ...}, one entry per epoch. on_step(step, logs) is called after
        every step (then each step ends before the next starts; without it the next may
        already run). Ctrl-C stops after the current step and raises KeyboardInterrupt."""
        if batch_size is not None and batch_size != self.global_batch:
            raise Error("batch_size %d: the plan's global batch is %d (compile with global_batch=%d)"
                        % (batch_size, self.global_batch, batch_size))
        if isinstance(validation_data, (tuple, list)) and len(validation_data) == 1:
            validation_data = validation_data[0]
        feeds = _Feeds(self, inputs)
        valid = _Feeds(self, validation_data) if validation_data is not None else None
        history = {}
        stop = {"sigint": False, "error": None}
        tty = bool(verbose) and hasattr(sys.stdout, "isatty") and sys.stdout.isatty()

        def progress(p, _user):
            p = p.contents
            try:
                if verbose and p.line:
                    sys.stdout.write(p.line.decode())
                    sys.stdout.flush()
                if p.kind == _capi.PROGRESS_EPOCH:
                    logs = {"loss": p.loss}
                    logs.update({m: p.metrics[k] for k, m in enumerate(self.metrics)})
                    if p.has_validation:
                        logs["val_loss"] = p.val_loss
                        logs.update({"val_" + m: p.val_metrics[k] for k, m in enumerate(self.metrics)})
                    for key, v in logs.items():
                        history.setdefault(key, []).append(v)
                if p.kind == _capi.PROGRESS_STEP and on_step is not None:
                    logs = {"loss": p.loss}
                    logs.update({m: p.metrics[k] for k, m in enumerate(self.metrics)})
                    on_step(p.step, logs)
            except BaseException as e:  # noqa: B902 - re-raised after the C call returns
                stop["error"] = e
                return 1
            return 1 if stop["sigint"] and p.kind == _capi.PROGRESS_STEP else 0

        fo = _capi.FitOptions()
        _lib.mgc_fit_options_init(ctypes.byref(fo))
        fo.epochs, fo.steps = (0, steps) if steps else (epochs, 0)
        if valid is not None:
            fo.validation, fo.n_validation = valid.feeds, valid.n
        fo.progress, fo.tty = _capi.PROGRESS_FN(progress), int(tty)
        # without on_step the callback only prints and asks to stop: the next step
        # may run while it does (docs/runtime.md, "Steps in flight")
        fo.run_ahead = int(on_step is None)
        err = _capi.Error()

        def on_sigint(_sig, _frame):
            stop["sigint"] = True

        main = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGINT, on_sigint) if main else None
        try:
            status = _lib.mgc_fit(self._session, feeds.feeds, feeds.n, ctypes.byref(fo), ctypes.byref(err))
        finally:
            if main:
                signal.signal(signal.SIGINT, old)
        if stop["error"] is not None and not isinstance(stop["error"], KeyboardInterrupt):
            raise stop["error"]
        if status == _capi.STOPPED:
            if verbose:
                sys.stdout.write("\n" if tty else "")
            raise KeyboardInterrupt("mgc: fit stopped after step %d" % self.step)
        _check(status, err)
        return history

    def train_step(self, inputs):
        """One optimizer step on exactly one global batch: {"loss": ..., metrics...}."""
        feeds, err, v = _Feeds(self, inputs), _capi.Error(), _capi.Scores()
        _check(_lib.mgc_train_step(self._session, feeds.feeds, feeds.n, ctypes.byref(v), ctypes.byref(err)), err)
        return self._scores(v)

    def _scores(self, v):
        out = {"loss": v.loss}
        out.update({m: v.metrics[k] for k, m in enumerate(self.metrics)})
        return out

    def evaluate(self, inputs):
        """Loss and metrics over every example once: {"loss": ..., "<metric>": ...}."""
        feeds, err, v = _Feeds(self, inputs), _capi.Error(), _capi.Scores()
        _check(_lib.mgc_evaluate(self._session, feeds.feeds, feeds.n, ctypes.byref(v), ctypes.byref(err)), err)
        return self._scores(v)

    def predict(self, inputs):
        """The model's output for every example (a dict by name when it has several)."""
        feeds, err = _Feeds(self, inputs), _capi.Error()
        outs = {n: np.empty((feeds.examples,) + s, _NP[d]) for n, d, s in self._outputs}
        fetches = (_capi.Fetch * max(len(outs), 1))()
        for k, (n, a) in enumerate(outs.items()):
            fetches[k] = _capi.Fetch(n.encode(), a.ctypes.data, a.nbytes)
        _check(_lib.mgc_predict(self._session, feeds.feeds, feeds.n, fetches, len(outs), ctypes.byref(err)), err)
        return next(iter(outs.values())) if len(outs) == 1 else outs

    def save(self, path):
        """PATH.mgx: the plan; anything else: a safetensors checkpoint of the variables."""
        err, path = _capi.Error(), os.fspath(path)
        if path.endswith(".mgx"):
            _check(_lib.mgc_plan_save(self._plan, path.encode(), ctypes.byref(err)), err)
        else:
            _check(_lib.mgc_checkpoint_save(self._session, path.encode(), ctypes.byref(err)), err)

    def load(self, path):
        """Loads a safetensors checkpoint (its step and shuffling seed too)."""
        err = _capi.Error()
        _check(_lib.mgc_checkpoint_load(self._session, os.fspath(path).encode(), ctypes.byref(err)), err)

    def export_onnx(self, path):
        """Writes the inference graph (predict's, one replica: batch = global_batch / devices) with
        the current variables as an ONNX model, opset 17 (docs/onnx.md)."""
        err = _capi.Error()
        _check(_lib.mgc_export_onnx(self._session, os.fspath(path).encode(), ctypes.byref(err)), err)


def compile(model, devices=None, global_batch=0, cross_device=None, bucket_bytes=0, stdlib_dir=None, seed=1,
            threads_per_device=1, collective_timeout=60.0, check_numerics=False, check_replicas=0):
    """A Plan from a model file (.mg), a plan file (.mgx) or model source text.

    devices: ["cpu:0", "cpu:1"] or "cpu:0,cpu:1" (default cpu:0); seed: initial
    weights and shuffling as `mgc run --seed`."""
    err, handle = _capi.Error(), ctypes.c_void_p()
    model = os.fspath(model)
    if isinstance(devices, (list, tuple)):
        devices = ",".join(devices)
    co = _capi.CompileOptions()
    _lib.mgc_compile_options_init(ctypes.byref(co))
    co.devices = devices.encode() if devices else None
    stdlib_dir = stdlib_dir or os.environ.get("MGC_STDLIB") or _bundled_stdlib()
    co.stdlib_dir = stdlib_dir.encode() if stdlib_dir else None
    co.global_batch, co.bucket_bytes = global_batch, bucket_bytes
    co.cross_device = cross_device.encode() if cross_device else None
    if "\n" not in model and "{" not in model:
        if not os.path.exists(model):
            raise Error("%s: no such model file" % model, _capi.ERR_IO)
        if model.endswith(".mgx"):
            if devices or global_batch or cross_device or bucket_bytes:
                raise Error("%s: a plan file is compiled already; devices and batch are its own" % model)
            _check(_lib.mgc_plan_load(model.encode(), ctypes.byref(handle), ctypes.byref(err)), err)
        else:
            _check(_lib.mgc_compile_file(model.encode(), ctypes.byref(co), ctypes.byref(handle), ctypes.byref(err)), err)
    else:
        _check(_lib.mgc_compile_source(model.encode(), b"<source>", ctypes.byref(co), ctypes.byref(handle),
                                       ctypes.byref(err)), err)
    return Plan(handle, seed, threads_per_device, collective_timeout, check_numerics, check_replicas)  # frees handle
