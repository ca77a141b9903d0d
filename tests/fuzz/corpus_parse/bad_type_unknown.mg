use nn

model m {
  input image: f33[batch, 784]
  input label: i32[batch]
  logits = dense(image, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}
