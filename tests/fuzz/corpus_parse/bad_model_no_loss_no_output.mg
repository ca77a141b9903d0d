model m {
  input x: f32[batch, 4]
}
