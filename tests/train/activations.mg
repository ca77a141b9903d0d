# activations.mg - the issue 12 activations, elementwise ops and initializers in
# one model: 2 and 4 devices must train what 1 device trains (tests/train.cmake)
use nn

model activations {
  input x: f32[batch, 8]
  input label: i32[batch]
  h = dense(x, 16, activation: gelu, kernel_initializer: he_uniform, bias_initializer: constant(0.01))
  h = dense(h, 16, activation: selu, kernel_initializer: lecun_normal)
  h = dense(h, 16, activation: leaky_relu, kernel_initializer: orthogonal)
  h = dense(h, 16, activation: elu, kernel_initializer: glorot_normal)
  h = dense(h, 16, activation: silu, kernel_initializer: truncated_normal(stddev: 0.1))
  h = hard_sigmoid(h) + softplus(h) + relu6(h) + abs(minimum(h, 0.5)) + pow(abs(h) + 0.5, 1.5)
  logits = dense(log_softmax(h), 10, kernel_initializer: random_normal(stddev: 0.2))
  loss = sparse_softmax_cross_entropy(logits, label)
  metric ce = categorical_crossentropy(logits, logits * 0.0 + 0.1, from_logits: true, label_smoothing: 0.1)
  metric top3 = sparse_top_k_categorical_accuracy(logits, label, k: 3)
}

train activations {
  optimizer = sgd(learning_rate: 0.05, momentum: 0.9)
  batch = 64 global
}
