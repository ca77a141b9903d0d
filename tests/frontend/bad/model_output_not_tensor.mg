model m {
  input x: f32[batch, 8]
  n = 3
  output n
}
