model m {
  input x: f32[batch, 8]
  y = prim.reshape(x, 1, 1, 1, 1, 1, 1, 8)
  output y
}
