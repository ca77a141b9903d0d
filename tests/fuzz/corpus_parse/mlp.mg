# mlp.mg - a 784-256-10 multilayer perceptron for (Fashion-)MNIST: 203,530 parameters.
use nn

model mlp {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]

  x      = dense(flatten(image), 256, activation: relu)
  logits = dense(x, 10)

  loss            = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train mlp {
  optimizer = adam()
  batch     = 64 per replica
}
