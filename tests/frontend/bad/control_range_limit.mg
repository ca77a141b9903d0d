model m {
  input x: f32[batch, 4]
  for i in range(1000000) {
    x = x + 1
  }
  output x
}
