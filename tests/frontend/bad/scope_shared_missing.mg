use nn

fn two(x: f32) {
  return dense(dense(x, 4), 4)
}

model m {
  input x: f32[batch, 8]
  a = dense(x, 4, name: "tower")
  b = two(x, name: "tower", reuse: true)
  output b
}
