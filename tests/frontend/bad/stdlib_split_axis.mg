use nn

model m {
  input x: f32[batch, 4, 6, 3]
  a, b = split(x, 2, axis: -5)
  y = a
  output y
}
