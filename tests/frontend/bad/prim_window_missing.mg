model m {
  input x: f32[batch, 4, 4, 1]
  y = prim.max_pool2d(x)
  output y
}
