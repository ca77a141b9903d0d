# mobilenet.mg - a small MobileNet (v1: depthwise-separable blocks; 36,874 trainable parameters) for
# Fashion-MNIST 28x28x1, 10 classes. Each block is Keras' MobileNet block:
# DepthwiseConv2D(3, padding "same", no bias) -> BatchNormalization -> ReLU ->
# Conv2D(filters, 1, no bias) -> BatchNormalization -> ReLU. MobileNet uses
# ReLU6; the stdlib has no relu6 yet, so this uses relu. The batch statistics
# are taken over the global batch (Keras' synchronized=True), so 2 devices
# train what 1 device trains (tests/train.cmake).
use nn

# batch_norm (stdlib) with the batch mean and variance all-reduced over replicas
fn sync_batch_norm(x: f32, momentum: float = 0.99, epsilon: float = 0.001) {
  c = dim(x, -1)
  param gamma: f32[c] = ones
  param beta: f32[c] = zeros
  state moving_mean: f32[c] = zeros
  state moving_variance: f32[c] = ones
  rows = size(x) / c
  batch_mean = prim.all_reduce(prim.reduce_mean(prim.reshape(x, rows, c), axes: 1), mean: 1)
  centered = x - prim.in_training(batch_mean, moving_mean)
  batch_variance = prim.all_reduce(prim.reduce_mean(prim.reshape(centered * centered, rows, c), axes: 1), mean: 1)
  variance = prim.in_training(batch_variance, moving_variance)
  new_mean = prim.assign(moving_mean, moving_mean * momentum + batch_mean * (1.0 - momentum))
  new_variance = prim.assign(moving_variance, moving_variance * momentum + batch_variance * (1.0 - momentum))
  return centered * (gamma / prim.sqrt(variance + epsilon)) + beta
}

# depthwise 3x3 (stride s) then pointwise 1x1 to `filters` channels
fn separable_block(x: f32[b, h, w, c], filters: int, strides: int = 1) {
  x = relu(sync_batch_norm(depthwise_conv2d(x, 3, strides: strides, padding: "same", use_bias: false)))
  return relu(sync_batch_norm(conv2d(x, filters, 1, use_bias: false)))
}

model mobilenet {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]

  x = relu(sync_batch_norm(conv2d(image, 16, 3, strides: 2, padding: "same", use_bias: false)))  # 14x14x16
  x = separable_block(x, 32)              # 14x14x32
  x = separable_block(x, 64, strides: 2)  # 7x7x64
  x = separable_block(x, 64)              # 7x7x64
  x = separable_block(x, 128, strides: 2) # 4x4x128
  x = separable_block(x, 128)             # 4x4x128
  x = prim.reduce_mean(x, axes: [1, 2])   # global average pooling: [batch, 128]
  logits = dense(x, 10)

  loss            = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train mobilenet {
  optimizer = adam(learning_rate: 0.001)
  batch     = 64 per replica
}
