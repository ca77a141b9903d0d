model m {
  input t: i32[batch, 2, 2, 2, 2, 2]
  y = prim.one_hot(t, depth: 8)
  output y
}
