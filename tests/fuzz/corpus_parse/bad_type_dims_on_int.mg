use nn

fn scale(x: f32, k: int[3]) {
  return x * k
}

model m {
  input x: f32[batch, 4]
  output x
}
