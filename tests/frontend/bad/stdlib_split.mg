use nn

model m {
  input x: f32[batch, 4, 6, 3]
  a, b = split(x, 4, axis: 2)
  y = a
  output y
}
