use nn

model m {
  input x: f32[batch, 4, 6, 3]
  y = slice(x, begin: [0, 4, 0, 0], size: [-1, -1, 6, 3])
  output y
}
