# issue 14: normalize works on rows of the last axis, so a scalar has none
model m {
  input x: f32[batch, 4]
  y = prim.normalize(prim.reduce_sum(x, axes: [0, 1]), epsilon: 0.001)
  output y
}
