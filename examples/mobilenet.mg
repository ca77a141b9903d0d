# mobilenet.mg - a small MobileNet (v1: depthwise-separable blocks; 36,874 trainable parameters) for
# Fashion-MNIST 28x28x1, 10 classes. Each block is Keras' MobileNet block:
# DepthwiseConv2D(3, padding "same", no bias) -> BatchNormalization -> ReLU6 ->
# Conv2D(filters, 1, no bias) -> BatchNormalization -> ReLU6. The batch
# statistics are taken over the global batch (batch_norm(sync: true), Keras'
# synchronized=True), so 2 devices train what 1 device trains (tests/train.cmake).
use nn

# depthwise 3x3 (stride s) then pointwise 1x1 to `filters` channels
fn separable_block(x: f32[b, h, w, c], filters: int, strides: int = 1) {
  x = relu6(batch_norm(depthwise_conv2d(x, 3, strides: strides, padding: "same", use_bias: false), sync: true))
  return relu6(batch_norm(conv2d(x, filters, 1, use_bias: false), sync: true))
}

model mobilenet {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]

  x = relu6(batch_norm(conv2d(image, 16, 3, strides: 2, padding: "same", use_bias: false), sync: true))  # 14x14x16
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
  optimizer = adam(learning_rate: 0.001)
  batch     = 64 per replica
}
