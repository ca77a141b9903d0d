use nn

model m {
  input x: f32[batch, 2, 3, 8]
  param w: f32[3, 8, 4] = glorot_uniform
  y = matmul(x, w)
  output y
}
