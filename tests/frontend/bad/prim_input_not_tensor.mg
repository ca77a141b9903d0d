model m {
  input x: f32[batch, 8]
  y = prim.relu("x")
  output y
}
