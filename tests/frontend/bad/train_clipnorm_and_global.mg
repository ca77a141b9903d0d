use nn

model m {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  logits = dense(flatten(image), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}

train m {
  optimizer = sgd(learning_rate: 0.1, clipnorm: 1.0, global_clipnorm: 5.0)
  batch = 64 per replica
}
