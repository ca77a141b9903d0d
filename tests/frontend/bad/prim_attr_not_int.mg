model m {
  input x: f32[batch, 8]
  y = prim.reduce_sum(x, axes: 1.5)
  output y
}
