model m {
  input x: f32[batch, 4]
  sizes = [1, 2]
  y = x * sizes[2]
  output y
}
