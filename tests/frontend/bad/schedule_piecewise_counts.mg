use nn
model m {
  input x: f32[batch, 4]
  input y: i32[batch]
  loss = sparse_softmax_cross_entropy(dense(x, 3), y)
}
train m {
  optimizer = sgd(learning_rate: piecewise_constant(boundaries: [10, 20], values: [0.1, 0.01]))
  batch = 8 global
}
