model m {
  input x: f32[batch, 1, 1, 1, 1, 1, 1]
  output x
}
