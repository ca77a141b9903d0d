# rmsprop.mg - (the rmsprop_update op) RMSprop with momentum, weight decay and clipnorm: 2 and 4 devices must train what 1 device trains
# (tests/train.cmake)
use nn

model rmsprop_mlp {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = dense(flatten(image), 64, activation: tanh)
  logits = dense(x, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train rmsprop_mlp {
  optimizer = rmsprop(learning_rate: 0.001, momentum: 0.5, weight_decay: 0.01, clipnorm: 0.5)
  batch = 64 global
}
