use nn

fn count(x: f32) {
  state seen: f32[1] = zeros
  a = prim.assign(seen, seen + 1.0)
  b = prim.assign(seen, seen + 2.0)
  return x
}

fn tower(x: f32[b, n]) {
  return batch_norm(dense(x, 4))
}

model m {
  input x: f32[batch, 8]
  input y: f32[batch, 8]
  z = count(x)
  d = tower(x, name: "t") - tower(y, name: "t", reuse: true)
  output d
}
