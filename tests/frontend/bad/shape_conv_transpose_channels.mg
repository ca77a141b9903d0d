use nn

model m {
  input image: f32[batch, 12, 12, 4]
  input label: i32[batch]
  x = prim.conv2d_transpose(image, prim.reshape(image, 3, 3, 32, 2))
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}
