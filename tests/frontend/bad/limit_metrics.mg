use nn

model m {
  input x: f32[batch, 8]
  input label: i32[batch]
  logits = dense(x, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric a1 = sparse_categorical_accuracy(logits, label)
  metric a2 = sparse_categorical_accuracy(logits, label)
  metric a3 = sparse_categorical_accuracy(logits, label)
  metric a4 = sparse_categorical_accuracy(logits, label)
  metric a5 = sparse_categorical_accuracy(logits, label)
  metric a6 = sparse_categorical_accuracy(logits, label)
  metric a7 = sparse_categorical_accuracy(logits, label)
  metric a8 = sparse_categorical_accuracy(logits, label)
  metric a9 = sparse_categorical_accuracy(logits, label)
  metric a10 = sparse_categorical_accuracy(logits, label)
  metric a11 = sparse_categorical_accuracy(logits, label)
  metric a12 = sparse_categorical_accuracy(logits, label)
  metric a13 = sparse_categorical_accuracy(logits, label)
  metric a14 = sparse_categorical_accuracy(logits, label)
  metric a15 = sparse_categorical_accuracy(logits, label)
  metric a16 = sparse_categorical_accuracy(logits, label)
}
