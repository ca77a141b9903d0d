use nn

model m {
  input x: f32[batch, 4]
  param w: f32[4, 4] = relu
  y = prim.matmul(x, w)
  output y
}
