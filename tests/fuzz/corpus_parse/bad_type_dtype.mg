use nn

model m {
  input image: f32[batch, 784]
  input label: f32[batch]
  logits = dense(image, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}
