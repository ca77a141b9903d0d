use nn

model m {
  input x: f32[batch, 4, 6, 3]
  y = zero_padding2d(x, padding: [[1, -2], [0, 0]])
  output y
}
