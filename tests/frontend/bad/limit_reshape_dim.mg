model m {
  input x: f32[batch, 8]
  y = prim.reshape(x, 0, 8)
  output y
}
