use nn

fn weights(x) {
  param w: f32[4] = zeros
  return x
}

fn statistics(x) {
  state w: f32[4] = zeros
  return x
}

model m {
  input x: f32[batch, 8]
  input y: f32[batch, 6]
  a = dense(x, 4, name: "tower")
  b = dense(y, 4, name: "tower", reuse: true)
  c = weights(x, name: "k")
  d = statistics(x, name: "k", reuse: true)
  output b
}
