use nn

model m {
  input x: f32[batch, 4, 6, 3]
  y = slice(x, begin: [0, 3, 0, 0], size: [-1, 2, 6, 3])
  output y
}
