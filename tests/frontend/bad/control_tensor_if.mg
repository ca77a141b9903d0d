model m {
  input x: f32[batch, 4]
  if x > 0 {
    x = x * 2
  }
  output x
}
