use nn
model m {
  input t: i32[batch, 16]
  x = one_hot(t, 0)
  output x
}
