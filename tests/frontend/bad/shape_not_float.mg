model m {
  input k: i32[batch, 8]
  y = prim.relu(k)
  output y
}
