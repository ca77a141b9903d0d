model m {
  input x: f32[batch, 8]
  y = prim.max_pool2d(x, k_h: 2, k_w: 2)
  output y
}
