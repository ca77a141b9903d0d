use nn

model m {
  input x: f32[batch, 4, 6, 3]
  y = softmax(x, axis: 4)
  output y
}
