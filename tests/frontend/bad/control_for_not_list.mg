model m {
  input x: f32[batch, 4]
  for i in 3 {
    x = x + i
  }
  output x
}
