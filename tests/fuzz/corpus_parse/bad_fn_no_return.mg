use nn

fn block(x: f32) {
  y = relu(x)
}

model m {
  input x: f32[batch, 4]
  y = block(x)
  output y
}
