# global_clipnorm.mg - every gradient rescaled by one norm over all of them
# (far below the unclipped norm, so every step clips), computed from the
# all-reduced gradients: 2 and 4 devices must train what 1 device trains
# (tests/train.cmake)
use nn

model clipped_cnn {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = conv2d(image, filters: 8, kernel: 3, activation: relu)
  x = max_pool2d(x, 2)
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train clipped_cnn {
  optimizer = sgd(learning_rate: 0.1, momentum: 0.9, global_clipnorm: 0.05)
  batch = 64 global
}
