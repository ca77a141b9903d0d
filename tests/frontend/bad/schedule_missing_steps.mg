use nn
model m {
  input x: f32[batch, 4]
  input y: i32[batch]
  loss = sparse_softmax_cross_entropy(dense(x, 3), y)
}
train m {
  optimizer = adam(learning_rate: cosine_decay(0.1))
  batch = 8 global
}
