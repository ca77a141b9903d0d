model m {
  input x: f32[batch, 1048576]
  y = prim.matmul(prim.reshape(x, 1048576, 1), prim.reshape(x, 1, 1048576))
  output y
}
