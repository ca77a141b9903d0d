model m {
  input x: f32[batch, 8]
  y = x * 2.0
  output y
  output y = x
}
