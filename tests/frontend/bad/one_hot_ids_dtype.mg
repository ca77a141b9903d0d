model m {
  input x: f32[batch, 16]
  y = prim.one_hot(x, depth: 8)
  output y
}
