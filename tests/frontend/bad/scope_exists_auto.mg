use nn

model m {
  input x: f32[batch, 8]
  a = dense(x, 4)
  b = dense(x, 4, name: "dense")
  output b
}
