"""_capi.py - ctypes declarations of include/mgc.h and where libmgc.so is found."""
import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_uint64, c_void_p)
from pathlib import Path

MAX_RANK = 8
OK, ERR_COMPILE, ERR_IO, ERR_ARG, ERR_RUNTIME, STOPPED = range(6)
PROGRESS_TEXT, PROGRESS_STEP, PROGRESS_EPOCH = range(3)
F32, I32, F64, U8 = range(4)


class Error(Structure):
    _fields_ = [("status", c_int), ("message", c_char * 4096)]


class TensorInfo(Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_int), ("rank", c_int), ("shape", c_int64 * MAX_RANK)]


class Feed(Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_int), ("rank", c_int), ("shape", POINTER(c_int64)),
                ("data", c_void_p)]


class Fetch(Structure):
    _fields_ = [("name", c_char_p), ("data", c_void_p), ("bytes", c_size_t)]


class Scores(Structure):
    _fields_ = [("loss", c_double), ("metrics", c_double * 16), ("examples", c_int64)]


class Progress(Structure):
    _fields_ = [("kind", c_int), ("step", c_int64), ("epoch", c_int64), ("epochs", c_int64),
                ("step_in_epoch", c_int64), ("steps_per_epoch", c_int64), ("loss", c_double),
                ("metrics", POINTER(c_double)), ("has_validation", c_int), ("val_loss", c_double),
                ("val_metrics", POINTER(c_double)), ("val_examples", c_int64), ("line", c_char_p)]


PROGRESS_FN = CFUNCTYPE(c_int, POINTER(Progress), c_void_p)


class CompileOptions(Structure):
    _fields_ = [("devices", c_char_p), ("stdlib_dir", c_char_p), ("global_batch", c_int64),
                ("cross_device", c_char_p), ("bucket_bytes", c_int64), ("sparse_grads", c_char_p),
                ("no_fuse", c_int), ("strict_devices", c_int), ("dump_after", c_char_p), ("time_passes", c_int),
                ("forward_only", c_int), ("text", c_void_p), ("text_user", c_void_p)]


class SessionOptions(Structure):
    _fields_ = [("seed", c_uint64), ("threads_per_device", c_int), ("collective_timeout", c_double),
                ("check_replicas", c_int), ("check_numerics", c_int), ("no_cuda_graphs", c_int),
                ("job", c_void_p)]


class FitOptions(Structure):
    _fields_ = [("epochs", c_int64), ("steps", c_int64), ("validation", POINTER(Feed)), ("n_validation", c_int),
                ("progress", PROGRESS_FN), ("user", c_void_p), ("tty", c_int), ("history", c_char_p),
                ("history_append", c_int), ("checkpoint_dir", c_char_p), ("save_every", c_int64),
                ("save_every_epochs", c_int), ("keep", c_int), ("total", c_int), ("quiet", c_int),
                ("stop", c_void_p), ("validation_data", c_void_p), ("run_ahead", c_int)]


def _candidates():
    env = os.environ.get("MGC_LIBRARY")
    if env:
        yield Path(env)
        return
    here = Path(__file__).resolve().parent
    yield here / "libmgc.so"                      # bundled by `pip install`
    for up in here.parents:                       # a source checkout: python/mgc -> build/
        for build in ("build", "build-nocuda"):
            yield up / build / "libmgc.so"


def load():
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.exists():
            return _declare(ctypes.CDLL(str(path))), path
    raise OSError("mgc: libmgc.so not found (tried %s); set MGC_LIBRARY to its path" % ", ".join(tried))


def _declare(lib):
    P, E = c_void_p, POINTER(Error)
    sigs = {
        "mgc_compile_options_init": (None, [POINTER(CompileOptions)]),
        "mgc_compile_file": (c_int, [c_char_p, POINTER(CompileOptions), POINTER(P), E]),
        "mgc_compile_source": (c_int, [c_char_p, c_char_p, POINTER(CompileOptions), POINTER(P), E]),
        "mgc_plan_load": (c_int, [c_char_p, POINTER(P), E]),
        "mgc_plan_save": (c_int, [P, c_char_p, E]),
        "mgc_plan_free": (None, [P]),
        "mgc_plan_model_name": (c_char_p, [P]),
        "mgc_plan_devices": (c_int, [P]),
        "mgc_plan_global_batch": (c_int64, [P]),
        "mgc_plan_has_train": (c_int, [P]),
        "mgc_plan_input_count": (c_int, [P]),
        "mgc_plan_input": (c_int, [P, c_int, POINTER(TensorInfo), E]),
        "mgc_plan_output_count": (c_int, [P]),
        "mgc_plan_output": (c_int, [P, c_int, POINTER(TensorInfo), E]),
        "mgc_plan_metric_count": (c_int, [P]),
        "mgc_plan_metric_name": (c_char_p, [P, c_int]),
        "mgc_session_options_init": (None, [POINTER(SessionOptions)]),
        "mgc_session_new": (c_int, [P, POINTER(SessionOptions), POINTER(P), E]),
        "mgc_session_free": (None, [P]),
        "mgc_session_step": (c_int64, [P]),
        "mgc_fit_options_init": (None, [POINTER(FitOptions)]),
        "mgc_train_step": (c_int, [P, POINTER(Feed), c_int, POINTER(Scores), E]),
        "mgc_fit": (c_int, [P, POINTER(Feed), c_int, POINTER(FitOptions), E]),
        "mgc_evaluate": (c_int, [P, POINTER(Feed), c_int, POINTER(Scores), E]),
        "mgc_predict": (c_int, [P, POINTER(Feed), c_int, POINTER(Fetch), c_int, E]),
        "mgc_variable_count": (c_int, [P]),
        "mgc_variable_info": (c_int, [P, c_int, POINTER(TensorInfo), POINTER(c_int), E]),
        "mgc_variable_read": (c_int, [P, c_char_p, c_void_p, c_size_t, E]),
        "mgc_variable_write": (c_int, [P, c_char_p, c_void_p, c_size_t, E]),
        "mgc_checkpoint_save": (c_int, [P, c_char_p, E]),
        "mgc_checkpoint_load": (c_int, [P, c_char_p, E]),
        "mgc_export_onnx": (c_int, [P, c_char_p, E]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib
