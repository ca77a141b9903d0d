# adagrad.mg - (the adagrad_update op) Adagrad (initial_accumulator_value on the first update) with clipnorm and an exponential schedule: 2 and 4 devices must train what 1 device trains
# (tests/train.cmake)
use nn

model adagrad_mlp {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = dense(flatten(image), 64, activation: tanh)
  logits = dense(x, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train adagrad_mlp {
  optimizer = adagrad(learning_rate: exponential_decay(0.05, decay_steps: 10, decay_rate: 0.5), clipnorm: 0.5)
  batch = 64 global
}
