use nn
model m {
  input x: f32[batch, 10]
  input l: i32[batch]
  metric top = sparse_top_k_categorical_accuracy(x, l, k: 0)
  output x
}
