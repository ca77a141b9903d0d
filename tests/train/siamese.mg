# siamese.mg - one tower called twice with the same params (name: + reuse:):
# one tower's params, gradients from both uses (tests/train.cmake, frontend.cmake)
use nn

fn tower(x: f32[b, n]) {
  h = dense(x, 16, activation: tanh)
  return dense(h, 8)
}

model siamese {
  input left: f32[batch, 12]
  input right: f32[batch, 12]
  input label: i32[batch]
  a = tower(left, name: "tower")
  b = tower(right, name: "tower", reuse: true)
  d = a - b
  logits = dense(d * d, 2)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train siamese {
  optimizer = sgd(learning_rate: 0.1)
  batch = 64 global
}
