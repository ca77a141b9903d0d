# sharing.mg - one tower's params used by five calls: the first call names its
# scope automatically ("tower"), the others share it by name (reuse: true)
use nn

fn tower(x: f32[b, n]) {
  return dense(dense(x, 6, activation: relu), 3)
}

model sharing {
  input a: f32[batch, 5]
  input b: f32[batch, 5]
  input c: f32[batch, 5]
  ya = tower(a)
  yb = tower(b, name: "tower", reuse: true)
  s = ya + yb
  for i in range(3) {
    s = s + tower(c * i, name: "tower", reuse: true)
  }
  output head = dense(s, 2, name: "head")
  output plain = dense(s, 2)
}
