model m {
  input x: f32[batch, 8]
  y = prim.reshape(x, dim(x, axis: 1), 8)
  output y
}
