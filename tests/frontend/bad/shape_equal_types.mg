model m {
  input x: f32[batch, 8]
  y = prim.relu_grad(x, prim.reshape(x, 8, 1))
  output y
}
