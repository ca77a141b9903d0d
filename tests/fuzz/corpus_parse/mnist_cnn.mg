# mnist_cnn.mg - the seed guide's CNN for (Fashion-)MNIST: 693,962 trainable parameters.
use nn                                   # stdlib/nn.mg

model mnist_cnn {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]

  x      = conv2d(image, filters: 32, kernel: 3, activation: relu)
  x      = max_pool2d(x, 2)
  x      = dense(flatten(x), 128, activation: relu)
  logits = dense(x, 10)

  loss            = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train mnist_cnn {
  optimizer = adam(learning_rate: 0.001)
  batch     = 64 per replica
}
