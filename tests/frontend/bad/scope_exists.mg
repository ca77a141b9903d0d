use nn

model m {
  input x: f32[batch, 8]
  a = dense(x, 4, name: "head")
  b = dense(x, 4, name: "head")
  output b
}
