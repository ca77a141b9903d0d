model m {
  input x: f32[batch, 4]
  input x: f32[batch, 8]
  output x
}
