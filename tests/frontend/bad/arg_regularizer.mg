use nn

model m {
  input x: f32[batch, 8]
  y = dense(x, 4, kernel_regularizer: 0.01)
  output y
}
