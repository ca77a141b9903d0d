use nn

model m {
  input x: f32[batch, 10 / (4 - 2 * 2)]
  output x
}
