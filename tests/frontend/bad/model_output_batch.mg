use nn

model m {
  input x: f32[batch, 8]
  y = dense(x, 4)
  output total = prim.reduce_sum(y, axes: 1)
}
