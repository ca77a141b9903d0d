use nn

model m {
  input x: f32[batch, 4]
  param w: f32 = ones
  output x
}
