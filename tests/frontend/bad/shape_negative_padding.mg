model m {
  input x: f32[batch, 8, 8, 1]
  y = prim.max_pool2d(x, k_h: 2, k_w: 2, pad_t: -1)
  output y
}
