use nn

model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  loss = sparse_softmax_cross_entropy(image, label)
}
