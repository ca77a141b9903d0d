use nn

model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = prim.max_pool2d(image, k_h: 2, k_w: 2, size: 3)
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}
