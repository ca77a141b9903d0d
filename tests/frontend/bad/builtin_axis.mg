model m {
  input x: f32[batch, 8]
  y = prim.reshape(x, dim(x, 5), 8)
  output y
}
