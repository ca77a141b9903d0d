use nn

model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  logits = dense(flatten(image), 99999999999999999999)
  loss = sparse_softmax_cross_entropy(logits, label)
}
