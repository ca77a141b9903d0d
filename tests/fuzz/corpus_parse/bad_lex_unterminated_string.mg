use nn

model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = conv2d(image, filters: 4, kernel: 3, padding: "same)
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}
