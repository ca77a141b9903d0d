use nn

fn f(x: f32[b, k] {
  return x
}

model m {
  input image: f32[batch, 784]
  input label i32[batch]
  x = dense(image, 10,, activation: relu)
  logits = dense(x 10)
  loss = = sparse_softmax_cross_entropy(logits, label)
}
