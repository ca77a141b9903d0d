# mobilenet_tanh.mg - examples/mobilenet.mg with tanh for relu6 and SGD for Adam,
# for the N-devices == 1-device test (tests/train.cmake). With relu6 the betas of
# a batch_norm that feeds another one (through a 1x1 conv) get gradients that are
# mostly rounding noise (the second batch_norm removes a constant shift), and
# each relu kink crossed by a last-bit difference moves them by whole elements:
# 1, 2 and 4 devices then drift apart pairwise by about the same amount (3% on
# conv2d/kernel after 20 steps on Fashion-MNIST, tests run at 1e-5), as two
# 1-device runs summing in different orders would. tanh is smooth: 1.2e-6 over 20 steps.
use nn

# depthwise 3x3 (stride s) then pointwise 1x1 to `filters` channels
fn separable_block(x: f32[b, h, w, c], filters: int, strides: int = 1) {
  x = tanh(batch_norm(depthwise_conv2d(x, 3, strides: strides, padding: "same", use_bias: false), sync: true))
  return tanh(batch_norm(conv2d(x, filters, 1, use_bias: false), sync: true))
}

model mobilenet {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]

  x = tanh(batch_norm(conv2d(image, 16, 3, strides: 2, padding: "same", use_bias: false), sync: true))  # 14x14x16
  x = separable_block(x, 32)              # 14x14x32
  x = separable_block(x, 64, strides: 2)  # 7x7x64
  x = separable_block(x, 64)              # 7x7x64
  x = separable_block(x, 128, strides: 2) # 4x4x128
  x = separable_block(x, 128)             # 4x4x128
  x = global_average_pool2d(x)            # [batch, 128]
  logits = dense(x, 10)

  loss            = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train mobilenet {
  optimizer = sgd(learning_rate: 0.01)
  batch     = 64 per replica
}
