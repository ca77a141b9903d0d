model m {
  input x: f32[batch, 8]
  y = prim.reshape(x, rank(x, 1), 8)
  output y
}
