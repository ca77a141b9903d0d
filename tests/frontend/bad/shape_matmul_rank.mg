model m {
  input x: f32[batch, 8]
  param w: f32[8] = glorot_uniform
  y = prim.matmul(x, w)
  output y
}
