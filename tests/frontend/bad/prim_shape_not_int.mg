model m {
  input x: f32[batch, 8]
  y = prim.reshape(x, 8, "one")
  output y
}
