use nn

fn block(x: f32) {
  return block(relu(x))
}

model m {
  input x: f32[batch, 4]
  y = block(x)
  output y
}
