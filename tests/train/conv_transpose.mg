# conv_transpose.mg - a strided conv2d down, a conv2d_transpose back up, then a
# grouped dilated conv2d: 2 and 4 devices must train what 1 device trains
# (tests/train.cmake). Smooth activations and average pooling: a relu kink or a
# max-pool tie that rounding moves changes a gradient discretely, which Adam
# then amplifies past 1e-5
use nn

model conv_transpose {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = conv2d(image, 8, 3, strides: 2, padding: "same", activation: tanh)                # 14x14x8
  x = conv2d_transpose(x, 4, [3, 2], strides: 2, padding: "same", activation: tanh)     # 28x28x4
  x = conv2d(x, 8, 3, dilation: [2, 1], groups: 2, activation: tanh)                    # 24x26x8
  x = avg_pool2d(x, 2)
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train conv_transpose {
  optimizer = adam(learning_rate: 0.001)
  batch = 64 global
}
