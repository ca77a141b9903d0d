use nn

model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  logits = dense(flatten(image), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(image, label)
}
