use nn

model m {
  input x: f32[batch, 8]
  a = dense(x, 4, name: "my/head")
  b = dense(x, 4, name: 3)
  c = dense(x, 4, name: "c", reuse: "yes")
  output a
}
