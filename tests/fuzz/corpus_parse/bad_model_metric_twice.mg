use nn

model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  logits = dense(flatten(image), 10)
  metric acc = sparse_categorical_accuracy(logits, label)
  metric acc = sparse_categorical_accuracy(logits, label)
  loss = sparse_softmax_cross_entropy(logits, label)
}
