use nn

model m {
  input x: f32[batch, 5, 7]
  input label: i32[batch, 4]
  loss = sparse_softmax_cross_entropy(x, label)
}
