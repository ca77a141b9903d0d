# bad inputs through the real command line (docs/errors.md): for each, exit
# status 1, the exact message on stderr, and nothing overwritten. Absurd sizes
# in any input fail at once, before anything is allocated.
. "$(dirname "$0")/lib.sh"
edit() { "$PY" "$SRC/tests/cli/mgx_edit.py" "$@"; }
# expect_same FILE COPY : FILE was not changed by the command that just failed
expect_same() { cmp -s "$1" "$2" || fail "$1 was changed by a failed command"; }
mlp=$SRC/examples/mlp.mg

# ---- files to work on: a small plan, a checkpoint of it, data of 8 examples ----
"$MGC" compile "$mlp" --devices cpu:0 --global-batch 4 -o "$tmp/m.mgx"
"$MGC" compile "$mlp" --devices cpu:0,cpu:1 -o "$tmp/m2.mgx"
"$PY" - "$tmp" <<'PY'
import gzip, json, struct, sys
import numpy as np
d = sys.argv[1]
def npy(name, a): np.save(f"{d}/{name}", a)
npy("x.npy", np.random.RandomState(0).rand(8, 28, 28, 1).astype(np.float32))
npy("y.npy", np.arange(8, dtype=np.int32) % 10)
npy("y1.npy", np.arange(8, dtype=np.int32) + 1)              # 1..8 and a label 8 of 10 classes: fine
npy("y10.npy", np.array([0, 1, 2, 10, 4, 5, 6, 7], np.int32))  # label 10 of 10 classes
npy("yf.npy", np.zeros(8, np.float32))                        # float labels
npy("y7.npy", np.zeros(7, np.int32))                          # one example short
npy("x32.npy", np.zeros((8, 32, 32, 1), np.float32))          # CIFAR-sized images
npy("x3.npy", np.zeros((3, 28, 28, 1), np.float32))           # fewer than a batch
npy("y3.npy", np.zeros(3, np.int32))
npy("scalar.npy", np.float32(1))
npy("x0.npy", np.zeros((0, 28, 28, 1), np.float32))
npy("bool.npy", np.zeros(8, bool))
np.save(f"{d}/fortran.npy", np.asfortranarray(np.zeros((8, 2), np.float32)))
def npy_header(shape, descr="<f4"):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    h += " " * (63 - (10 + len(h)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode()
open(f"{d}/huge.npy", "wb").write(npy_header("(1048576, 1048576)") + b"\0" * 64)
open(f"{d}/short.npy", "wb").write(npy_header("(8, 28, 28, 1)") + b"\0" * 100)
def idx(dims, tcode=0x08, data=b""):
    return bytes([0, 0, tcode, len(dims)]) + b"".join(struct.pack(">I", x) for x in dims) + data
open(f"{d}/huge.idx", "wb").write(idx([1048576, 1048576, 1]))
open(f"{d}/short.idx", "wb").write(idx([8, 28, 28], data=b"\0" * 100))
open(f"{d}/notes.txt", "w").write("image,label\n0,1\n")
# an IDX directory whose image and label counts disagree, and one with a corrupt file
import os
for sub, n_img, n_lab in (("count", 8, 7), ("corrupt", 8, 8)):
    os.mkdir(f"{d}/{sub}")
    for split in ("train", "t10k"):
        open(f"{d}/{sub}/{split}-images-idx3-ubyte", "wb").write(idx([n_img, 28, 28], data=b"\0" * (n_img * 784)))
        open(f"{d}/{sub}/{split}-labels-idx1-ubyte", "wb").write(idx([n_lab], data=b"\0" * n_lab))
open(f"{d}/corrupt/train-images-idx3-ubyte", "wb").write(b"P5\n28 28\n255\n")
gzip.open(f"{d}/corrupt/t10k-images-idx3-ubyte.gz", "wb")  # beside the raw file: not used
# safetensors: a valid one is written by mgc below; these lie
def st(header, data=b""):
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data
t = lambda dt, shape, a, b: {"dtype": dt, "shape": shape, "data_offsets": [a, b]}
open(f"{d}/lying.safetensors", "wb").write(st({"dense/kernel": t("F32", [784, 256], 0, 802816)}, b"\0" * 64))
open(f"{d}/huge.safetensors", "wb").write(st({"w": t("F32", [1048576, 1048576], 0, 4 << 40)}, b"\0" * 64))
open(f"{d}/hlen.safetensors", "wb").write(struct.pack("<Q", 1 << 30) + b"{}" + b" " * 54)
open(f"{d}/json.safetensors", "wb").write(struct.pack("<Q", 8) + b'{"a": 1,')
open(f"{d}/model.pt", "wb").write(b"PK\x03\x04" + b"\0" * 60)
open(f"{d}/empty.safetensors", "wb").write(st({}))
open(f"{d}/meta2.safetensors", "wb").write(struct.pack("<Q", 40) + b'{"__metadata__":{},"__metadata__":{}}   ')
open(f"{d}/v2.npy", "wb").write(b"\x93NUMPY\x02\x00\x10\x00")
PY
"$MGC" run "$tmp/m.mgx" --steps 1 --input image="$tmp/x.npy" --input label="$tmp/y.npy" --save "$tmp/ok.safetensors" > /dev/null
cp "$tmp/ok.safetensors" "$tmp/keep.safetensors"
cp "$tmp/m.mgx" "$tmp/keep.mgx"
run_m() { "$MGC" run "$tmp/m.mgx" --steps 1 "$@"; }
x="image=$tmp/x.npy"
y="label=$tmp/y.npy"

# ---- command line ----
expect_fail "usage: mgc COMMAND [options]   (mgc COMMAND --help for a command's options)" "$MGC"
expect_fail "mgc compile: unrecognized option '--bogus'" "$MGC" compile "$mlp" --bogus
expect_fail "mgc run: option '--steps' requires an argument" "$MGC" run "$tmp/m.mgx" --steps
expect_fail "usage: mgc compile MODEL.mg [-o PLAN.mgx] [options]" "$MGC" compile "$mlp" "$mlp"
expect_fail "usage: mgc inspect PLAN.mgx" "$MGC" inspect
expect_fail "usage: mgc run PLAN.mgx [options]" "$MGC" run
expect_fail "mgc: --replicas: '0' is not an integer from 1 to 1024" "$MGC" compile "$mlp" --replicas 0
expect_fail "mgc: --replicas: '4294967298' is not an integer from 1 to 1024" "$MGC" compile "$mlp" --replicas 4294967298
expect_fail "mgc: --devices: '4294967297' is not an integer from 0 to 2147483647" "$MGC" compile "$mlp" --devices cpu:4294967297
expect_fail "mgc: --global-batch: '-3' is not an integer from 1 to 4611686018427387904" "$MGC" compile "$mlp" --global-batch -3
expect_fail "mgc: --bucket-bytes: '1k' is not an integer from 1 to 4611686018427387904" "$MGC" compile "$mlp" --bucket-bytes 1k
expect_fail "mgc: --devices: empty device list" "$MGC" compile "$mlp" --devices ,
expect_fail "mgc: --devices: cannot mix cpu and gpu devices in one plan" "$MGC" compile "$mlp" --devices cpu:0,gpu:0
expect_fail "mgc: --format: 'png' is not one of text, dot, svg" "$MGC" dump "$mlp" --format png
expect_fail "mgc: --epochs: '0' is not an integer from 1 to 1000000000" run_m --epochs 0
expect_fail "mgc: --epochs: '9844501578230000' is not an integer from 1 to 1000000000" run_m --epochs 9844501578230000
expect_fail "mgc: --steps: '1.5' is not an integer from 1 to 4611686018427387904" "$MGC" run "$tmp/m.mgx" --steps 1.5
expect_fail "mgc: --seed: '-1' is not an integer from 0 to 9223372036854775807" run_m --seed -1
expect_fail "mgc: --seed: '18446744073709551616' is not an integer from 0 to 9223372036854775807" run_m --seed 18446744073709551616
expect_fail "mgc: --seed: '1e20' is not an integer from 0 to 9223372036854775807" run_m --seed 1e20
cores4=$((4 * $(getconf _NPROCESSORS_ONLN)))
expect_fail "mgc: --threads-per-device: '0' is not an integer from 1 to $cores4" run_m --threads-per-device 0
expect_fail "mgc: --threads-per-device: '99999999999' is not an integer from 1 to $cores4" run_m --threads-per-device 99999999999
expect_fail "mgc: --check-replicas: 'x' is not an integer from 1 to 2147483647" run_m --check-replicas x
for t in 5x inf 1e20 1e308 nan 0; do
  expect_fail "mgc: --collective-timeout: '$t' is not a number of seconds above 0 and at most 86400" run_m --collective-timeout $t
done
expect_fail "mgc: --input: expected NAME=FILE, got 'image'" run_m --input image
many=(); for k in $(seq 17); do many+=(--input "i$k=$tmp/x.npy"); done
expect_fail "mgc: --input: at most 16 bindings" run_m "${many[@]}"
expect_fail "mgc: eval needs --load CKPT" "$MGC" eval "$tmp/m.mgx"
expect_fail "mgc: predict needs -o OUT.npy" "$MGC" predict "$tmp/m.mgx" --load "$tmp/ok.safetensors" --input "$x"
expect_fail "mgc: predict needs --input NAME=FILE" "$MGC" predict "$tmp/m.mgx" --load "$tmp/ok.safetensors" -o y.npy

# ---- model source read by the CLI (the language's errors: tests/frontend/bad) ----
expect_fail "mgc: error: $tmp/none.mg: cannot read: No such file or directory" "$MGC" compile "$tmp/none.mg" --devices cpu:0
expect_fail "mgc: error: $tmp: cannot read: Is a directory" "$MGC" compile "$tmp" --devices cpu:0
printf 'model m {\0}\n' > "$tmp/nul.mg"
expect_fail "mgc: error: $tmp/nul.mg: cannot read: it holds a NUL byte (not model source)" \
  "$MGC" compile "$tmp/nul.mg" --devices cpu:0
mkdir "$tmp/lib"; printf 'model inner {\n  input x: f32[batch, 2]\n  output x\n}\n' > "$tmp/lib/extra.mg"
printf 'use extra\n\nmodel m {\n  input x: f32[batch, 2]\n  output x\n}\n' > "$tmp/uses.mg"
MGC_STDLIB=$tmp/lib expect_fail "$tmp/lib/extra.mg:1:1: error: a module cannot hold model blocks" \
  "$MGC" compile "$tmp/uses.mg" --devices cpu:0
cat > "$tmp/argmax.mg" <<'EOF'
use nn

model m {
  input image: f32[batch, 784]
  input label: i32[batch]
  logits = dense(image, 10)
  loss = prim.reduce_mean(prim.argmax_match(logits, label), axes: 1)
}

train m {
  optimizer = sgd
  batch = 4 global
}
EOF
expect_fail "$tmp/argmax.mg:7:27: error: cannot differentiate 'argmax_match' on the path from the loss to param 'dense/kernel'" \
  "$MGC" compile "$tmp/argmax.mg" --devices cpu:0 -o "$tmp/m.mgx"
expect_same "$tmp/m.mgx" "$tmp/keep.mgx"
printf 'model m {\n  input x: f32[batch, 2]\n  output x\n}\n\ntrain m {\n  optimizer = sgd\n  batch = 4 global\n}\n' > "$tmp/noloss.mg"
expect_fail "mgc: error: $tmp/noloss.mg: model 'm' has a train block but no loss" \
  "$MGC" compile "$tmp/noloss.mg" --devices cpu:0 -o "$tmp/m.mgx"
expect_same "$tmp/m.mgx" "$tmp/keep.mgx"
# a tensor of 2^40 elements fails at compile time
printf 'model m {\n  input x: f32[batch, 1048576, 1048576]\n  output x\n}\n' > "$tmp/big.mg"
expect_fail "$tmp/big.mg:2:12: error: input 'x' is too large: f32[1,1048576,1048576] has 2^40 elements or more" \
  "$MGC" compile "$tmp/big.mg" --devices cpu:0
expect_fail "$mlp:5:20: error: dimension 4294967296 of input 'image' is out of range (1 to 2^31)" \
  "$MGC" compile "$mlp" --devices cpu:0 --global-batch 4294967296
# ... one of 2^39 compiles, then fails before anything is allocated
printf 'model m {\n  input x: f32[batch, 1048576, 524288]\n  y = x * 2.0 + x\n  output y\n}\n' > "$tmp/half.mg"  # x and x * 2.0 live at once
"$MGC" compile "$tmp/half.mg" --devices cpu:0 --no-fuse -o "$tmp/half.mgx"  # unfused: fused, x * 2.0 never exists
"$MGC" inspect "$tmp/half.mgx" > "$tmp/inspect"
expect_line "$tmp/inspect" '^  cpu:0  planned with reuse 4\.00 TiB   without reuse 6\.00 TiB$'
start=$(date +%s%N)
expect_fail "mgc: $tmp/half.mgx: the plan needs 6144.0 GiB of memory, this machine has $("$PY" -c '
import os; print("%.1f" % ((os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") + int(open("/proc/meminfo").read().split("SwapTotal:")[1].split()[0]) * 1024) / 2**30))') GiB" \
  "$MGC" predict "$tmp/half.mgx" --load "$tmp/ok.safetensors" --input x="$tmp/x.npy" -o "$tmp/o.npy"
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 10000 ] || fail "refusing an absurd plan took over 10 s"

# ... and one of 2 GiB that fits the machine but not the process's address space (not under ASan,
# which needs terabytes of it for its shadow memory; ldd's output taken whole: under pipefail, grep -q
# quitting at the match could fail ldd with SIGPIPE and so run this under ASan)
if ! grep -q libasan <<< "$(ldd "$MGC")"; then
  # (the data are read before the arenas are allocated, so the input is small and the arena large)
  printf 'model m {\n  input x: f32[batch, 1, 1]\n  y = prim.broadcast_to(x, 1, 1048576, 256)\n  z = y * 2.0 + y\n  output z\n}\n' \
    > "$tmp/gib.mg"
  "$PY" -c 'import sys, numpy as np; np.save(sys.argv[1], np.ones((1, 1, 1), np.float32))' "$tmp/x11.npy"
  "$MGC" compile "$tmp/gib.mg" --devices cpu:0 --no-fuse -o "$tmp/gib.mgx"  # unfused: y and y * 2.0 at once
  expect_fail "mgc: $tmp/gib.mgx: cannot allocate 2147483712 bytes for device cpu:0: out of memory (2147483776 bytes)" \
    bash -c 'ulimit -v 1500000 && exec "$@"' sh "$MGC" predict "$tmp/gib.mgx" --load "$tmp/empty.safetensors" \
    --input x="$tmp/x11.npy" -o "$tmp/o.npy"
fi

# ---- plans ----
expect_fail "mgc: $tmp: cannot read: Is a directory" "$MGC" inspect "$tmp"
expect_fail "mgc: $tmp/notes.txt: not an mgc plan (bad magic)" "$MGC" inspect "$tmp/notes.txt"
head -c 100 "$tmp/m.mgx" > "$tmp/cut.mgx"
expect_fail "mgc: $tmp/cut.mgx: truncated (section 'strings' needs $("$PY" -c '
import struct, sys; print(struct.unpack_from("<Q", open(sys.argv[1], "rb").read(), 20)[0])' "$tmp/m.mgx") bytes, 68 remain)" \
  "$MGC" run "$tmp/cut.mgx"
edit "$tmp/m.mgx" "$tmp/crc.mgx" crc 2
expect_fail "mgc: $tmp/crc.mgx: section 'graph': CRC mismatch" "$MGC" run "$tmp/crc.mgx"
edit "$tmp/m.mgx" "$tmp/v1.mgx" version 1
expect_fail "mgc: $tmp/v1.mgx: plan format version 1, this mgc reads version 6 (compile the model again)" \
  "$MGC" inspect "$tmp/v1.mgx"
edit "$tmp/m2.mgx" "$tmp/gpu.mgx" device-kind gpu
"$MGC" inspect "$tmp/gpu.mgx" | grep -q 'gpu:0 gpu:1' || fail "the edited plan is not for gpu:0 gpu:1"
"$MGC" run "$tmp/gpu.mgx" --steps 1 --input "$x" --input "$y" > /dev/null 2> "$tmp/err" && fail "ran on gpu:0 with 8 examples"
expect_line "$tmp/err" "^mgc: $tmp/gpu.mgx: gpu:1 is not available: .+; re-planned for 2 CPU devices$"
why=$(sed -n 's/^mgc: .*gpu\.mgx: gpu:1 is not available: \(.*\); re-planned for 2 CPU devices$/\1/p' "$tmp/err")
expect_fail "mgc: $tmp/gpu.mgx: gpu:1 is not available: $why" "$MGC" run "$tmp/gpu.mgx" --strict-devices
# fields behind a valid CRC (the section decoders; offsets in docs/plan-format.md)
while IFS='|' read -r args want; do
  edit "$tmp/m.mgx" "$tmp/p.mgx" $args
  expect_fail "mgc: $tmp/p.mgx: $want" "$MGC" inspect "$tmp/p.mgx"
done <<'EOF'
cut 4 3|section 'train': payload ends early (8 bytes needed at offset 159, 5 remain)
pad 8 3|section 'sources': 3 unread bytes at the end
poke 1 8 <B 0|section 'strings': string 0 contains a NUL byte
poke 2 8 <I 9|section 'graph': dtype 9 out of range (0..3)
poke 2 12 <I 7|section 'graph': node 0: rank 7 exceeds 6
poke 2 16 <q -5|section 'graph': node 0: dimension 0 is negative (-5)
poke 2 16 <q 4611686018427387904|section 'graph': node 0: element count overflows
poke 2 52 <B 11|section 'graph': node 0: 11 integer attributes (at most 10)
poke 4 0 <B 2|section 'train': training flag is 2, not 0 or 1
poke 7 0 <I 4294967295|section 'schedule': event count 4294967295 out of range
item-kind 7|section 'schedule': schedule item kind 7 out of range
EOF
edit "$tmp/m.mgx" "$tmp/dims.mgx" dims 0 4 1048576 1048576 1
expect_fail "mgc: $tmp/dims.mgx: invalid plan: node 0 (input): f32[4,1048576,1048576,1] has a negative dimension or 2^40 elements or more" \
  "$MGC" inspect "$tmp/dims.mgx"
edit "$tmp/m2.mgx" "$tmp/batch.mgx" global-batch 66
expect_fail "mgc: $tmp/batch.mgx: invalid plan: global batch 66 is not 64 per replica x 2 devices" \
  "$MGC" run "$tmp/batch.mgx"
edit "$tmp/m.mgx" "$tmp/p.mgx" poke 4 62 '<q' 8   # batch per replica 8 (at 62; the global batch at 70)
edit "$tmp/p.mgx" "$tmp/batch8.mgx" global-batch 8
expect_fail "mgc: $tmp/batch8.mgx: invalid plan: input 'image' does not hold the global batch of 8 on axis 0" \
  "$MGC" run "$tmp/batch8.mgx"
edit "$tmp/m.mgx" "$tmp/arena.mgx" arena 1125899906842624
status=0; "$MGC" run "$tmp/arena.mgx" 2>"$tmp/err" || status=$?  # its tensors: every one on device 0, each on its own
[ "$status" = 1 ] || fail "mgc run of a plan with an absurd arena exited $status"
expect_line "$tmp/err" "^mgc: $tmp/arena.mgx: invalid plan: the arena of device 0 \\(1125899906842624 bytes\\) exceeds its tensors \\([0-9]+ bytes\\)$"
printf 'model m {\n  input x: f32[batch, 2]\n  output x\n}\n' > "$tmp/notrain.mg"
"$MGC" compile "$tmp/notrain.mg" --devices cpu:0 -o "$tmp/notrain.mgx"
expect_fail "mgc: $tmp/notrain.mgx: model 'm' has no train block" "$MGC" run "$tmp/notrain.mgx"
printf 'use nn\n\nmodel m {\n  input x: f32[batch, 2]\n  input label: i32[batch]\n  l = sparse_softmax_cross_entropy(x, label)\n  loss = l\n}\n' > "$tmp/nooutput.mg"
"$MGC" compile "$tmp/nooutput.mg" --devices cpu:0 -o "$tmp/nooutput.mgx"
expect_fail "mgc: $tmp/nooutput.mgx: model 'm' has no output to predict" \
  "$MGC" predict "$tmp/nooutput.mgx" --load "$tmp/empty.safetensors" --input x="$tmp/x.npy" -o "$tmp/o.npy"

# ---- checkpoints (the old one survives every failure) ----
expect_fail "mgc: $tmp/none.safetensors: cannot open: No such file or directory" run_m --load "$tmp/none.safetensors"
expect_fail "mgc: $tmp/model.pt: header length 67324752 exceeds the file size (64 bytes)" run_m --load "$tmp/model.pt"
expect_fail "mgc: $tmp/hlen.safetensors: header length 1073741824 exceeds the 100 MiB limit (not a safetensors file?)" \
  run_m --load "$tmp/hlen.safetensors"
expect_fail "mgc: $tmp/json.safetensors: header is not valid JSON (error at byte 7 of the header)" \
  run_m --load "$tmp/json.safetensors"
expect_fail "mgc: $tmp/meta2.safetensors: \"__metadata__\" appears twice" run_m --load "$tmp/meta2.safetensors"
expect_fail "mgc: $tmp/lying.safetensors: tensor 'dense/kernel': data_offsets [0, 802816) exceed the data section (64 bytes)" \
  run_m --load "$tmp/lying.safetensors"
expect_fail "mgc: $tmp/huge.safetensors: tensor 'w': data_offsets [0, 4398046511104) exceed the data section (64 bytes)" \
  run_m --load "$tmp/huge.safetensors"
"$PY" - "$tmp" <<'PY'
import json, struct, sys
d = sys.argv[1]
raw = open(f"{d}/ok.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head, data = json.loads(raw[8:8 + n]), raw[8 + n:]
def write(name, h, body=data):
    t = json.dumps(h).encode()
    t += b" " * (-len(t) % 8)
    open(f"{d}/{name}", "wb").write(struct.pack("<Q", len(t)) + t + body)
def edited(f):
    h = json.loads(json.dumps(head)); f(h); return h
def drop(h):  # dense_1/bias gone: its bytes go to a tensor nobody wants
    h["extra"] = h.pop("dense_1/bias"); h["extra"].update(dtype="U8", shape=[40])
write("extra.safetensors", edited(drop))
write("shape.safetensors", edited(lambda h: h["dense_1/bias"].update(shape=[2, 5])))
write("dtype.safetensors", edited(lambda h: h["dense_1/bias"].update(dtype="I32")))
write("step.safetensors", edited(lambda h: h["__metadata__"].update(step="-3")))
PY
expect_fail "mgc: $tmp/extra.safetensors: tensor 'extra' is not a variable of model 'mlp'" run_m --load "$tmp/extra.safetensors"
expect_fail "mgc: $tmp/shape.safetensors: tensor 'dense_1/bias' is f32[2,5], the model wants f32[10]" \
  run_m --load "$tmp/shape.safetensors"
expect_fail "mgc: $tmp/dtype.safetensors: tensor 'dense_1/bias' is i32[10], the model wants f32[10]" \
  run_m --load "$tmp/dtype.safetensors"
expect_fail "mgc: $tmp/step.safetensors: metadata \"step\" is \"-3\", not a step count" \
  run_m --load "$tmp/step.safetensors" --input "$x" --input "$y"
"$PY" - "$tmp" <<'PY'
import json, struct, sys
d = sys.argv[1]
raw = open(f"{d}/ok.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head, data = json.loads(raw[8:8 + n]), raw[8 + n:]
a, b = head["dense_1/bias"]["data_offsets"]
del head["dense_1/bias"]
keep = data[:a] + data[b:]
for v in head.values():
    if "data_offsets" in v and v["data_offsets"][0] >= b:
        v["data_offsets"] = [o - (b - a) for o in v["data_offsets"]]
t = json.dumps(head).encode(); t += b" " * (-len(t) % 8)
open(f"{d}/gone.safetensors", "wb").write(struct.pack("<Q", len(t)) + t + keep)
PY
expect_fail "mgc: $tmp/gone.safetensors: tensor 'dense_1/bias' is missing" run_m --load "$tmp/gone.safetensors"
expect_fail "mgc: $tmp/no/dir/x.safetensors: cannot write: No such file or directory" \
  run_m --input "$x" --input "$y" --save "$tmp/no/dir/x.safetensors"
# a run that fails (a label no class has) saves nothing
expect_fail "mgc: $tmp/y10.npy: label 10 of example 3 is outside [0, 10)" \
  run_m --input "$x" --input label="$tmp/y10.npy" --save "$tmp/ok.safetensors"
expect_same "$tmp/ok.safetensors" "$tmp/keep.safetensors"

# ---- data ----
expect_fail "mgc: $tmp/nodir/train-images-idx3-ubyte.gz: cannot open: No such file or directory" run_m --data "$tmp/nodir"
expect_fail "mgc: $tmp/count/train-labels-idx1-ubyte has 7 labels but $tmp/count/train-images-idx3-ubyte has 8 images" \
  run_m --data "$tmp/count"
expect_fail "mgc: $tmp/corrupt/train-images-idx3-ubyte: not an IDX file (bad magic 0x50350a32)" run_m --data "$tmp/corrupt"
expect_fail "mgc: --data needs a model with two inputs, one f32 (images) and one i32 (labels); bind inputs with name=FILE instead" \
  "$MGC" eval "$tmp/notrain.mgx" --load "$tmp/empty.safetensors"
expect_fail "mgc: $tmp/notes.txt: neither an NPY nor an IDX file (it starts with 69 6d 61 67)" \
  run_m --input image="$tmp/notes.txt" --input "$y"
expect_fail "mgc: $tmp/none.npy: cannot open: No such file or directory" run_m --input image="$tmp/none.npy" --input "$y"
expect_fail "mgc: $tmp/huge.idx: dimensions 1048576x1048576x1 exceed the limit of 2^31 elements" \
  run_m --input image="$tmp/huge.idx" --input "$y"
expect_fail "mgc: $tmp/short.idx: truncated (expected 6272 bytes of data, got 100)" \
  run_m --input image="$tmp/short.idx" --input "$y"
expect_fail "mgc: $tmp/huge.npy: shape 1048576x1048576 exceeds the limit of 2^31 elements" \
  run_m --input image="$tmp/huge.npy" --input "$y"
expect_fail "mgc: $tmp/short.npy: truncated (expected 25088 bytes of data, got 100)" \
  run_m --input image="$tmp/short.npy" --input "$y"
expect_fail "mgc: $tmp/v2.npy: truncated (expected 12 bytes of preamble, got 10)" \
  run_m --input image="$tmp/v2.npy" --input "$y"
expect_fail "mgc: $tmp/fortran.npy: fortran_order arrays are not supported (save in C order)" \
  run_m --input image="$tmp/fortran.npy" --input "$y"
expect_fail "mgc: $tmp/bool.npy: unsupported dtype '|b1' (supported: <f4 <f8 <i4 <i8 |u1 |i1)" \
  run_m --input "$x" --input label="$tmp/bool.npy"
expect_fail "mgc: $tmp/scalar.npy: holds a scalar, not a list of examples" run_m --input image="$tmp/scalar.npy" --input "$y"
expect_fail "mgc: $tmp/x32.npy: examples are 32x32x1 but input 'image' wants f32[28,28,1]" \
  run_m --input image="$tmp/x32.npy" --input "$y"
expect_fail "mgc: $tmp/yf.npy: holds f32 values but input 'label' wants i32[]" run_m --input "$x" --input label="$tmp/yf.npy"
expect_fail "mgc: $tmp/y7.npy has 7 examples but $tmp/x.npy has 8" run_m --input "$x" --input label="$tmp/y7.npy"
expect_fail "mgc: input 'label' has no data (bind it with label=FILE)" run_m --input "$x"
expect_fail "mgc: input 'image' is bound twice" run_m --input "$x" --input "$x" --input "$y"
expect_fail "mgc: no model input named 'images'" run_m --input "$x" --input "$y" --input images="$tmp/x.npy"
expect_fail "mgc: $tmp/x3.npy: 3 examples, fewer than one global batch of 4" \
  run_m --input image="$tmp/x3.npy" --input label="$tmp/y3.npy"
expect_fail "mgc: $tmp/y10.npy: label 10 of example 3 is outside [0, 10)" \
  "$MGC" eval "$tmp/m.mgx" --load "$tmp/ok.safetensors" --input "$x" --input label="$tmp/y10.npy"
expect_fail "mgc: $tmp/x0.npy: holds no examples" \
  "$MGC" predict "$tmp/m.mgx" --load "$tmp/ok.safetensors" --input image="$tmp/x0.npy" -o "$tmp/o.npy"
run_m --input "$x" --input label="$tmp/y1.npy" > /dev/null || fail "labels 1..8 of 10 classes were refused"

# ---- outputs that cannot be written (what was there survives) ----
cp "$tmp/x.npy" "$tmp/keep.npy"
expect_fail "mgc: $tmp/no/dir/y.npy: cannot write: No such file or directory" \
  "$MGC" predict "$tmp/m.mgx" --load "$tmp/ok.safetensors" --input "$x" -o "$tmp/no/dir/y.npy"
expect_fail "mgc: $tmp/no/dir/h.jsonl: cannot write: No such file or directory" \
  run_m --input "$x" --input "$y" --history "$tmp/no/dir/h.jsonl"
expect_fail "mgc: $tmp/no/dir/m.mgx: cannot write: No such file or directory" \
  "$MGC" compile "$mlp" --devices cpu:0 -o "$tmp/no/dir/m.mgx"
expect_fail "mgc: $tmp/x.npy/m.mgx: cannot write: Not a directory" \
  "$MGC" compile "$mlp" --devices cpu:0 -o "$tmp/x.npy/m.mgx"
expect_same "$tmp/x.npy" "$tmp/keep.npy"
expect_fail "mgc: cannot run dot: is Graphviz installed? (--format dot prints the graph without it)" \
  env PATH=/nonexistent "$MGC" dump "$tmp/m.mgx" --format svg
mkdir "$tmp/bin"; printf '#!/bin/sh\nexit 3\n' > "$tmp/bin/dot"; chmod +x "$tmp/bin/dot"   # a dot that reads nothing
expect_fail "mgc: dot (Graphviz) failed with exit status 3" env PATH="$tmp/bin:$PATH" "$MGC" dump "$tmp/m.mgx" --format svg

# ---- several workers (mpirun): plans that do not agree ----
if command -v mpirun > /dev/null; then
  mpi="mpirun --allow-run-as-root --oversubscribe -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS -x MGC_STDLIB"
  status=0
  $mpi -np 1 "$MGC" run "$tmp/m2.mgx" --steps 1 : -np 1 "$MGC" run "$tmp/m.mgx" --steps 1 > "$tmp/log" 2>&1 || status=$?
  [ "$status" != 0 ] || fail "workers with different plans trained"
  if grep -q "this build has no MPI" "$tmp/log"; then
    expect_line "$tmp/log" "^mgc: mpi: started as 2 processes, but this build has no MPI$"
  else
    expect_line "$tmp/log" "^mgc: workers disagree: the plan's global batch is 128 on rank 0 but 4 on rank 1$"
    status=0
    $mpi -np 3 "$MGC" run "$tmp/m2.mgx" --steps 1 > "$tmp/log" 2>&1 || status=$?
    [ "$status" != 0 ] || fail "6 replicas split a global batch of 128"
    expect_line "$tmp/log" "^mgc: $tmp/m2.mgx: global batch 128 is not divisible by the job's 6 replicas \(3 workers\)$"
  fi
fi
echo ok
