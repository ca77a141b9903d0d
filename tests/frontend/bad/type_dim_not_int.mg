model m {
  input x: f32[batch, 2.5]
  output x
}
