use nn

model m {
  input image: f32[batch, 12, 12, 4]
  input label: i32[batch]
  x = conv2d(image, 8, [3, 3, 3])
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}
