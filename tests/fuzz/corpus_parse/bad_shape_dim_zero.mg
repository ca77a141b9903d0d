use nn

model m {
  input x: f32[batch, 0]
  output x
}
