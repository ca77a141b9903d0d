use nn

model m {
  input x: f32[batch, 8]
  input label: i32[batch]
  logits = dense(x, 4)
  xent = sparse_softmax_cross_entropy(logits, label)
  loss = xent * xent
}
