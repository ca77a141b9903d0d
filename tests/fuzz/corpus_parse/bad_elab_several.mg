use nn

model m {
  input image: f32[batch, 784]
  input label: i32[batch]
  x = dense(image, 64, activation: rellu)
  y = dense(image, units: 2.0)
  z = x + undefined
  logits = dense(x, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric acc = logits
}

train m {
  optimizer = sgd(learning_rate: 0, beta_1: 0.9)
  batch = 0 per replica
}
