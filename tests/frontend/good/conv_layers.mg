# The convolution layers with Keras' arguments; the param counts are Keras'
# (tests/frontend.cmake lists them).
use nn

model convs {
  input image: f32[batch, 28, 28, 3]
  input label: i32[batch]

  x = conv2d(image, 8, [3, 5], strides: [1, 2], padding: "same")        # 28x14x8
  x = conv2d(x, 16, 3, dilation: 2, groups: 4, use_bias: false)          # 24x10x16
  x = depthwise_conv2d(x, 3, depth_multiplier: 2, strides: 2, padding: "same",
                       activation: relu)                                 # 12x5x32
  x = separable_conv2d(x, 24, 3, padding: "same")                        # 12x5x24
  x = conv2d_transpose(x, 6, 3, strides: 2, padding: "same")             # 24x10x6
  x = conv2d_transpose(x, 4, [2, 3], dilation: [1, 2])                   # 25x14x4
  logits = dense(flatten(x), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}

train convs {
  optimizer = adam
  batch = 8 per replica
}
