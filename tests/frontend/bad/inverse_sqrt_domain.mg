use nn

model m {
  input x: f32[batch, 4]
  output y = x * inverse_sqrt(-4)
}
