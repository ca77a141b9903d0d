# tiny.mg - a small classifier the libmgc tests train: 12 features, 4 classes.
use nn

model tiny {
  input x: f32[batch, 12]
  input label: i32[batch]

  h      = dense(x, 16, activation: relu)
  logits = dense(h, 4)

  loss            = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train tiny {
  optimizer = adam(learning_rate: 0.01)
  batch     = 32 per replica
}
