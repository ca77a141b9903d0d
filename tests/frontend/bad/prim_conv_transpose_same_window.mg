use nn

model m {
  input image: f32[batch, 12, 12, 4]
  input label: i32[batch]
  x = conv2d_transpose(image, 4, 2, strides: 3, padding: "same")
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}
