use nn

model m {
  input image: f32[batch, 12, 12, 4]
  input label: i32[batch]
  x = conv2d(image, filters: 8, kernel: 3, dilation: [1, 0])
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}
