model m {
  input x: f32[batch, 8]
  y = (3)(x)
  output y
}
