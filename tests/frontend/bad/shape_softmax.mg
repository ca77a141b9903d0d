model m {
  input x: f32[batch, 8]
  s = prim.reduce_sum(x, axes: 3)
  y = prim.softmax(s)
  output y
}
