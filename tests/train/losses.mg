# losses.mg - a weighted sum of two losses (Keras loss_weights) plus kernel and
# bias regularizers (tests/train.cmake: the reported loss is that sum, its
# gradient matches central differences, N devices train what 1 device trains)
use nn

model losses {
  input x: f32[batch, 12]
  input target: f32[batch, 3]
  input label: i32[batch]
  h = dense(x, 16, activation: tanh, kernel_regularizer: l2(0.01), bias_regularizer: l1(0.02))
  logits = dense(h, 4, kernel_regularizer: l1_l2(0.005, 0.03))
  regression = dense(h, 3)
  loss = sparse_softmax_cross_entropy(logits, label) + 0.5 * mean_squared_error(regression, target)
  metric xent = sparse_softmax_cross_entropy(logits, label)
  metric mse = mean_squared_error(regression, target)
  output logits
  output regression
}

train losses {
  optimizer = sgd(learning_rate: 0.1)
  batch = 64 global
}
